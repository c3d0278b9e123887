//! rxing's C++-port QR reader (`rxing::qrcode::cpp_port::QrReader`, as `MultiFormatReader`
//! calls it for QR codes alone), the same answers, each scanned row's run lengths taken from
//! the matrix's words instead of a pixel at a time.
//!
//! `FindFinderPatterns` run-length encodes every third row (`GetPatternRowTP`: one
//! `BitArray::get` and a compare per pixel, the largest single cost of a failing pass after
//! the Java port's row scan). Here the runs come from the row's words (`getNextSet` /
//! `getNextUnset`), the same `PatternRow` value for value (`pattern_row_matches_rxing`), and
//! everything after is rxing's own code called as rxing calls it: its pattern test
//! (`FindLeftGuardBy` with `IsPattern`, the predicate copied from rxing's private
//! `FindPattern`), `LocateConcentricPattern`, `GenerateFinderPatternSets`, `SampleQR` and
//! `Decode`. `cpp_port_matches_rxing` compares the patterns and the texts with `QrReader`'s.
//!
//! Licence: the functions marked as rxing's ("line for line", "copied") are derived from rxing
//! 0.9.3 (Apache-2.0, by rxing's authors, itself a port of ZXing), and stay under its terms.

use rxing::common::cpp_essentials::{
    ConcentricPattern, FindLeftGuardBy, FixedPattern, IsPattern, LocateConcentricPattern,
    PatternRow, PatternType, PatternView,
};
use rxing::common::{BitArray, BitMatrix, DetectorRXingResult};
use rxing::qrcode::cpp_port::decoder::Decode;
use rxing::qrcode::cpp_port::detector::{GenerateFinderPatternSets, SampleQR};
use rxing::{point, BarcodeFormat, DecodeHints, Point, RXingResult};

/// rxing's `LEN`, `PATTERN` and `E2E` of `qrcode/cpp_port/detector.rs`.
const LEN: usize = 5;
const PATTERN: FixedPattern<LEN, 7, false> = FixedPattern::new([1, 1, 3, 1, 1]);
const E2E: bool = true;

/// What `QrReader::decode_with_hints` reads in `image` when `hints` ask for QR codes alone
/// (`PossibleFormats` = {QR_CODE}, no pure-barcode hint: the hints `scan_rxing` passes), or
/// `None` where it answers an error: the first finder-pattern set, most plausible first, whose
/// sampled grid decodes validly.
pub(crate) fn decode(image: &BitMatrix, hints: &DecodeHints) -> Option<String> {
    let try_harder = hints.TryHarder.unwrap_or(false);
    let min_module_size = hints.MinimumModuleSize.unwrap_or(0);
    let mut all = find_finder_patterns(image, try_harder, min_module_size);
    // rxing skips sets sharing a pattern with a valid read's; one valid read ends the search
    // here (at most one symbol), so no set is ever skipped.
    for set in GenerateFinderPatternSets(&mut all) {
        let Ok(detected) = SampleQR(image, &set) else {
            continue;
        };
        let Ok(decoded) = Decode(detected.getBits()) else {
            continue;
        };
        if decoded.isValid() {
            let result = RXingResult::with_decoder_result(
                decoded,
                detected.getPoints(),
                BarcodeFormat::QR_CODE,
            );
            return Some(result.getText().to_string());
        }
    }
    None
}

/// rxing's private `FindPattern` (`qrcode/cpp_port/detector.rs`), line for line.
fn find_pattern(
    view: PatternView<'_>,
    min_module_size: f32,
) -> rxing::common::Result<PatternView<'_>> {
    FindLeftGuardBy::<LEN, _>(
        view,
        LEN,
        |view: &PatternView, space_in_pixel: Option<f32>| {
            if (view[2] as i32) < 3
                || view[2] < 2 as PatternType * std::cmp::max(view[0], view[4])
                || view[2] < std::cmp::max(view[1], view[3])
            {
                return false;
            }
            IsPattern::<E2E, 5, 7, false>(view, &PATTERN, space_in_pixel, 0.1, 0.0, min_module_size)
                != 0.0
        },
    )
}

/// rxing's `FindFinderPatterns`, line for line but for the row's runs ([`pattern_row`]).
pub(crate) fn find_finder_patterns(
    image: &BitMatrix,
    try_harder: bool,
    min_module_size: u32,
) -> Vec<ConcentricPattern> {
    let min_skip = if min_module_size > 1 {
        3 * min_module_size
    } else {
        3
    };
    const MAX_MODULES_FAST: u32 = 20 * 4 + 17;
    let height = image.height();
    let mut skip = (3 * height) / (4 * MAX_MODULES_FAST);
    if try_harder {
        skip = 3;
    } else if skip < min_skip {
        skip = min_skip;
    }
    let mut res: Vec<ConcentricPattern> = Vec::new();
    let mut y = skip - 1;
    while y < height {
        let row = PatternRow::new(pattern_row(&image.getRow(y)));
        let mut next: PatternView = PatternView::new(&row);
        while {
            if let Ok(up_next) = find_pattern(next, min_module_size as f32) {
                next = up_next;
                next.isValid()
            } else {
                false
            }
        } {
            let p = point(
                next.pixelsInFront() as f32
                    + next[0] as f32
                    + next[1] as f32
                    + next[2] as f32 / 2.0,
                y as f32 + 0.5,
            );
            if !res
                .iter()
                .any(|old| Point::distance(p, old.p) < (old.size as f32) / 2.0)
            {
                let pattern = LocateConcentricPattern::<E2E, 5, 7>(
                    image,
                    &PATTERN.into(),
                    p,
                    next.iter().sum::<u16>() as i32 * 3,
                );
                if let Some(p) = pattern {
                    res.push(p);
                }
            }
            next.skipPair();
            next.skipPair();
            next.extend();
        }
        y += skip;
    }
    res
}

/// rxing's `GetPatternRowFromBits`: the row's run lengths, a white run first (0 when the row
/// starts black) and a white one last (0 when it ends black); empty for an empty row. Taken a
/// run at a time from the row's words.
pub(crate) fn pattern_row(row: &BitArray) -> Vec<PatternType> {
    let n = row.get_size();
    let mut out = Vec::new();
    if n == 0 {
        return out;
    }
    let mut x = 0;
    loop {
        let black = row.getNextSet(x).min(n);
        out.push((black - x) as PatternType);
        if black >= n {
            return out;
        }
        let white = row.getNextUnset(black).min(n);
        out.push((white - black) as PatternType);
        if white >= n {
            out.push(0);
            return out;
        }
        x = white;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::GrayImage;
    use rxing::common::cpp_essentials::GetPatternRowTP;
    use rxing::qrcode::cpp_port::detector::FindFinderPatterns;
    use rxing::qrcode::cpp_port::QrReader;
    use rxing::{BinaryBitmap, Luma8Source, Reader};

    fn hints() -> DecodeHints {
        DecodeHints {
            TryHarder: Some(true),
            PossibleFormats: Some(std::collections::HashSet::from([BarcodeFormat::QR_CODE])),
            ..Default::default()
        }
    }

    /// `g` through the binarizer our passes use: rxing's row runs and ours for every row, its
    /// finder patterns and ours, `QrReader`'s text and ours. Whether rxing read a code.
    fn check(g: &GrayImage, what: &str) -> bool {
        let hints = hints();
        let Ok(source) = Luma8Source::new_with_slice(g.as_raw(), g.width(), g.height()) else {
            return false;
        };
        let mut bitmap = BinaryBitmap::new(crate::hybrid::FastHybrid::new(source));
        let matrix = bitmap.get_black_matrix().clone();
        let mut theirs = PatternRow::default();
        for y in 0..matrix.getHeight() {
            GetPatternRowTP(&matrix, y, &mut theirs, false);
            let ours = pattern_row(&matrix.getRow(y));
            assert_eq!(ours.len(), theirs.len(), "{what}: row {y}");
            assert!(
                ours.iter().enumerate().all(|(i, &v)| v == theirs[i]),
                "{what}: row {y}"
            );
        }
        assert_eq!(
            find_finder_patterns(&matrix, true, 0),
            FindFinderPatterns(&matrix, true, 0),
            "{what}: patterns"
        );
        let text = QrReader
            .decode_with_hints(&mut bitmap, &hints)
            .ok()
            .map(|r| r.getText().to_string());
        assert_eq!(decode(&matrix, &hints), text, "{what}: text");
        text.is_some()
    }

    #[test]
    fn pattern_row_matches_rxing_on_edges() {
        for w in [1u32, 2, 31, 32, 33, 63, 64, 65, 100] {
            for seed in 0..20u32 {
                let g = GrayImage::from_fn(w, 3, |x, _| {
                    let v = (x.wrapping_mul(2654435761).wrapping_add(seed * 97)) >> (seed % 7);
                    image::Luma([if v % 3 == 0 { 0 } else { 255 }])
                });
                let mut m = BitMatrix::new(w, 1).expect("matrix");
                for x in 0..w {
                    if g.get_pixel(x, 0)[0] == 0 {
                        m.set(x, 0);
                    }
                }
                let mut theirs = PatternRow::default();
                GetPatternRowTP(&m, 0, &mut theirs, false);
                let ours = pattern_row(&m.getRow(0));
                assert_eq!(ours.len(), theirs.len(), "w {w} seed {seed}");
                assert!(ours.iter().enumerate().all(|(i, &v)| v == theirs[i]));
            }
        }
    }

    #[test]
    fn cpp_port_matches_rxing() {
        let mut checked = 0;
        let mut read = 0;
        for (p, g) in crate::working_images() {
            let inverted = GrayImage::from_fn(g.width(), g.height(), |x, y| {
                image::Luma([255 - g.get_pixel(x, y)[0]])
            });
            for (name, v) in [("plain", &g), ("inverted", &inverted)] {
                read += usize::from(check(v, &format!("{} {name}", p.display())));
                checked += 1;
            }
        }
        assert!(
            checked == 0 || (read > 0 && read < checked),
            "{read} of {checked}"
        );
        eprintln!("cpp port: {checked} matrices, rxing read {read}");
    }
}
