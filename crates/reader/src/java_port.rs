//! rxing's Java-port QR reader (`rxing::qrcode::QRCodeReader`), the same answers, its finder
//! search walking a row's runs instead of its pixels.
//!
//! rxing's `MultiFormatReader` runs the C++-port `QrReader` and, when that reads nothing, the
//! Java-port `QRCodeReader` on the same black matrix (issue 29 round four kept both: each read
//! images the other did not). On a failing pass, most of the Java port's time is the row scan
//! of `FinderPatternFinder::find`: every third row, a pixel at a time through
//! `BitMatrix::get`, its 1:1:3:1:1 state machine stepping once per pixel (on photos without a
//! code, more than the C++ port's whole pass). Here the same state machine takes a run of
//! equal bits in one step (the row's words give the runs), and every decision that is not
//! counting — the ratio test, the cross checks and the candidate list
//! (`FinderPatternFinder::handlePossibleCenter`), the detector's sampling and the decoder — is
//! rxing's own code, called as `QRCodeReader` calls it; the row skip, the quorum test and the
//! choice of the best three candidates (private in rxing) are copied line for line. So the
//! candidates, the chosen finders and the text are rxing's (`java_port_matches_rxing` compares
//! them on real passes' matrices).
//!
//! Licence: the functions marked as rxing's ("line for line", "copied") are derived from rxing
//! 0.9.3 (Apache-2.0, by rxing's authors, itself a port of ZXing), and stay under its terms.

use rxing::common::{BitMatrix, DetectorRXingResult};
use rxing::qrcode::decoder::qrcode_decoder;
use rxing::qrcode::detector::{Detector, FinderPattern, FinderPatternFinder, FinderPatternInfo};
use rxing::{DecodeHints, Point};

/// rxing's `FinderPatternFinder::CENTER_QUORUM`, `MIN_SKIP` and `MAX_MODULES`.
const CENTER_QUORUM: usize = 2;
const MIN_SKIP: u32 = 3;
const MAX_MODULES: u32 = 97;

/// What `rxing::qrcode::QRCodeReader::decode_with_hints` reads in `matrix` (no pure-barcode
/// hint): its text, or `None` where it answers an error.
pub(crate) fn decode(matrix: &BitMatrix, hints: &DecodeHints) -> Option<String> {
    let info = find(matrix, hints)?;
    let detected = Detector::new(matrix).processFinderPatternInfo(info).ok()?;
    let decoded = qrcode_decoder::decode_bitmatrix_with_hints(detected.getBits(), hints).ok()?;
    Some(decoded.getText().to_string())
}

/// `FinderPatternFinder::find`: the three finder patterns rxing's Java port chooses in
/// `matrix`, ordered (`orderBestPatterns`), or `None` where it finds no three.
pub(crate) fn find(matrix: &BitMatrix, hints: &DecodeHints) -> Option<FinderPatternInfo> {
    let mut finder = FinderPatternFinder::new(matrix);
    finder.min_module_size = f64::from(hints.MinimumModuleSize.unwrap_or(0));
    scan_rows(&mut finder, matrix, hints);
    let mut best = select_best_patterns(finder.getPossibleCenters())?;
    rxing::result_point_utils::orderBestPatterns(&mut best);
    Some(FinderPatternInfo::new(best))
}

/// The row loop of `FinderPatternFinder::find`, a run at a time: the same rows, the same
/// state counts at every white pixel where rxing tests them, the same calls in the same order.
fn scan_rows(finder: &mut FinderPatternFinder<'_>, image: &BitMatrix, hints: &DecodeHints) {
    let try_harder = matches!(hints.TryHarder, Some(true));
    let min_module_size = finder.min_module_size;
    let min_skip = if min_module_size > 1.0 {
        (3.0 * min_module_size) as u32
    } else {
        MIN_SKIP
    };
    let max_i = image.getHeight();
    let max_j = image.getWidth();
    let mut i_skip = (3 * max_i) / (4 * MAX_MODULES);
    if try_harder {
        i_skip = MIN_SKIP;
    } else if i_skip < min_skip {
        i_skip = min_skip;
    }
    let mut has_skipped = false;
    let mut done = false;
    let mut i = i_skip as i32 - 1;
    while i < max_i as i32 && !done {
        let mut sc = [0u32; 5];
        let mut state = 0usize;
        let row = image.getRow(i as u32);
        let mut j = 0u32;
        while j < max_j {
            let black = row.get(j as usize);
            // The run of equal bits from j (bits past the width count as its end).
            let end = if black {
                row.getNextUnset(j as usize)
            } else {
                row.getNextSet(j as usize)
            }
            .min(max_j as usize) as u32;
            if black {
                // rxing: each black pixel moves an odd state on (once) and counts.
                if state & 1 == 1 {
                    state += 1;
                }
                sc[state] += end - j;
                j = end;
                continue;
            }
            // The run's first white pixel, at j: where rxing tests a full count.
            let mut row_done = false;
            if state & 1 == 0 {
                if state == 4 {
                    let mut confirmed = false;
                    if found_pattern_cross(&sc, min_module_size) {
                        confirmed = finder.handlePossibleCenter(&sc, i as u32, j);
                        if confirmed {
                            i_skip = 2;
                            if has_skipped {
                                done = have_multiply_confirmed_centers(finder.getPossibleCenters());
                            } else {
                                let row_skip =
                                    find_row_skip(finder.getPossibleCenters(), &mut has_skipped);
                                if row_skip > sc[2] {
                                    i += row_skip as i32 - sc[2] as i32 - i_skip as i32;
                                    // rxing: j = maxJ - 1, then the counts cleared: the row ends.
                                    row_done = true;
                                }
                            }
                            state = 0;
                            sc = [0; 5];
                        }
                    }
                    if !confirmed {
                        shift_counts2(&mut sc);
                        state = 3;
                    }
                } else {
                    state += 1;
                    sc[state] += 1;
                }
            } else {
                sc[state] += 1;
            }
            if row_done {
                break;
            }
            // The rest of the white run: a cleared state (0) moves on to 1 at its first pixel,
            // then every pixel counts in the (odd) state.
            let rest = end - j - 1;
            if rest > 0 {
                if state & 1 == 0 {
                    state += 1;
                }
                sc[state] += rest;
            }
            j = end;
        }
        if found_pattern_cross(&sc, min_module_size) {
            let confirmed = finder.handlePossibleCenter(&sc, i as u32, max_j);
            if confirmed {
                i_skip = sc[0];
                if has_skipped {
                    done = have_multiply_confirmed_centers(finder.getPossibleCenters());
                }
            }
        }
        i += i_skip as i32;
    }
}

/// `FinderPatternFinder::foundPatternCross`, line for line (here it inlines: rxing's, called
/// across the crate boundary at every full count, was a twentieth of a failing read).
#[inline]
fn found_pattern_cross(sc: &[u32; 5], min_module_size: f64) -> bool {
    let mut total = 0;
    for &count in sc {
        if count == 0 {
            return false;
        }
        total += count;
    }
    if total < 7 {
        return false;
    }
    // A necessary condition in integers first (most counts on a noisy row fail it): with
    // m = total / 7 the bound below is under m / 2 + 1/2 (3× that for the centre), so
    // |total − 7·count| < total / 2 + 7/2 must hold, by at least 1/16 for total ≥ 8 (equal
    // bounds at total = 7, where both tests are exact) — far beyond f64 rounding.
    let (t, t2) = (u64::from(total), 2 * u64::from(total));
    let outside = |count: u32, k: u64| t2.abs_diff(14 * u64::from(count)) >= k * (t + 7);
    if outside(sc[0], 1)
        || outside(sc[1], 1)
        || (3 * t2).abs_diff(14 * u64::from(sc[2])) >= 3 * (t + 7)
        || outside(sc[3], 1)
        || outside(sc[4], 1)
    {
        return false;
    }
    let module_size = total as f64 / 7.0;
    if module_size < min_module_size {
        return false;
    }
    let max_variance = module_size / 2.0 + (0.5_f64 / module_size).min(0.5_f64);
    (module_size - sc[0] as f64).abs() < max_variance
        && (module_size - sc[1] as f64).abs() < max_variance
        && (3.0 * module_size - sc[2] as f64).abs() < 3.0 * max_variance
        && (module_size - sc[3] as f64).abs() < max_variance
        && (module_size - sc[4] as f64).abs() < max_variance
}

/// `FinderPatternFinder::doShiftCounts2`.
fn shift_counts2(sc: &mut [u32; 5]) {
    sc[0] = sc[2];
    sc[1] = sc[3];
    sc[2] = sc[4];
    sc[3] = 1;
    sc[4] = 0;
}

/// `FinderPatternFinder::findRowSkip` (private in rxing), line for line.
fn find_row_skip(centers: &[FinderPattern], has_skipped: &mut bool) -> u32 {
    if centers.len() <= 1 {
        return 0;
    }
    let mut first: Option<&FinderPattern> = None;
    for center in centers {
        if center.getCount() >= CENTER_QUORUM {
            if let Some(fnp) = first {
                *has_skipped = true;
                return ((Point::from(fnp) - Point::from(center))
                    .abs()
                    .fold(|x, y| x - y)
                    / 2.0)
                    .floor() as u32;
            }
            first = Some(center);
        }
    }
    0
}

/// `FinderPatternFinder::haveMultiplyConfirmedCenters` (private in rxing), line for line.
fn have_multiply_confirmed_centers(centers: &[FinderPattern]) -> bool {
    let mut confirmed = 0;
    let mut total_module_size = 0.0f32;
    for pattern in centers {
        if pattern.getCount() >= CENTER_QUORUM {
            confirmed += 1;
            total_module_size += pattern.getEstimatedModuleSize();
        }
    }
    if confirmed < 3 {
        return false;
    }
    let average = total_module_size / centers.len() as f32;
    let total_deviation = centers.iter().fold(0.0f32, |acc, pattern| {
        acc + (pattern.getEstimatedModuleSize() - average).abs()
    });
    total_deviation <= 0.05 * total_module_size
}

/// `FinderPatternFinder::selectBestPatterns` (private in rxing), line for line; the innermost
/// loop stops where rxing's skips every remaining candidate (sorted by module size, each one
/// after the first too big is too big as well).
fn select_best_patterns(centers: &[FinderPattern]) -> Option<[FinderPattern; 3]> {
    if centers.len() < 3 {
        return None;
    }
    let mut c: Vec<FinderPattern> = centers
        .iter()
        .copied()
        .filter(|fp| fp.getCount() >= CENTER_QUORUM)
        .collect();
    c.sort_unstable_by(|x, y| {
        x.getEstimatedModuleSize()
            .partial_cmp(&y.getEstimatedModuleSize())
            .unwrap_or(std::cmp::Ordering::Less)
    });
    let squared = |a: &FinderPattern, b: &FinderPattern| {
        Point::from(a).squaredDistance(Point::from(b)) as f64
    };
    let mut distortion = f64::MAX;
    let mut best: Option<[FinderPattern; 3]> = None;
    let n = c.len();
    for i in 0..n {
        let fpi = &c[i];
        let min_module_size = fpi.getEstimatedModuleSize();
        // rxing: `(i + 1)..(len - 1)`, with `len - 1` wrapping to a huge bound only when the
        // list is empty, where no `i` runs.
        for j in (i + 1)..(n - 1) {
            let fpj = &c[j];
            let squares0 = squared(fpi, fpj);
            for fpk in &c[j + 1..] {
                if fpk.getEstimatedModuleSize() > min_module_size * 1.4 {
                    break;
                }
                let mut a = squares0;
                let mut b = squared(fpj, fpk);
                let mut cc = squared(fpi, fpk);
                if a < b {
                    if b > cc {
                        if a < cc {
                            std::mem::swap(&mut b, &mut cc)
                        } else {
                            let temp = a;
                            a = cc;
                            cc = b;
                            b = temp;
                        }
                    }
                } else if b < cc {
                    if a < cc {
                        std::mem::swap(&mut a, &mut b)
                    } else {
                        let temp = a;
                        a = b;
                        b = cc;
                        cc = temp;
                    }
                } else {
                    std::mem::swap(&mut a, &mut cc);
                }
                if cc == 0.0 {
                    continue;
                }
                let d = ((cc - 2.0 * b).abs() + (cc - 2.0 * a).abs()) / cc;
                if d < distortion {
                    distortion = d;
                    best = Some([*fpi, *fpj, *fpk]);
                }
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::GrayImage;
    use rxing::qrcode::QRCodeReader;
    use rxing::{BarcodeFormat, BinaryBitmap, Luma8Source, Reader};

    fn hints() -> DecodeHints {
        DecodeHints {
            TryHarder: Some(true),
            PossibleFormats: Some(std::collections::HashSet::from([BarcodeFormat::QR_CODE])),
            ..Default::default()
        }
    }

    /// The candidates `scan_rows` leaves, as rxing's `find` leaves its list: filtered to the
    /// quorum and sorted by module size once there are three.
    fn candidates(matrix: &BitMatrix, hints: &DecodeHints) -> Vec<FinderPattern> {
        let mut finder = FinderPatternFinder::new(matrix);
        scan_rows(&mut finder, matrix, hints);
        let mut c = finder.getPossibleCenters().clone();
        if c.len() >= 3 {
            c.retain(|fp| fp.getCount() >= CENTER_QUORUM);
            c.sort_unstable_by(|x, y| {
                x.getEstimatedModuleSize()
                    .partial_cmp(&y.getEstimatedModuleSize())
                    .unwrap_or(std::cmp::Ordering::Less)
            });
        }
        c
    }

    /// `g` through the binarizer our passes use, then both finder searches and both readers:
    /// the same candidates, the same three finders, the same text. Returns whether rxing found
    /// three finders (for the test's own coverage count).
    fn check(g: &GrayImage, what: &str) -> bool {
        let hints = hints();
        let Ok(source) = Luma8Source::new_with_slice(g.as_raw(), g.width(), g.height()) else {
            return false;
        };
        let mut bitmap = BinaryBitmap::new(crate::hybrid::FastHybrid::new(source));
        let matrix = bitmap.get_black_matrix().clone();
        let mut theirs = FinderPatternFinder::new(&matrix);
        let found = theirs.find(&hints);
        assert_eq!(
            &candidates(&matrix, &hints),
            theirs.getPossibleCenters(),
            "{what}: candidates"
        );
        let ours = find(&matrix, &hints);
        let pts = |i: &FinderPatternInfo| [*i.getBottomLeft(), *i.getTopLeft(), *i.getTopRight()];
        assert_eq!(
            ours.as_ref().map(pts),
            found.as_ref().ok().map(pts),
            "{what}: finders"
        );
        let text = QRCodeReader
            .decode_with_hints(&mut bitmap, &hints)
            .ok()
            .map(|r| r.getText().to_string());
        assert_eq!(decode(&matrix, &hints), text, "{what}: text");
        found.is_ok()
    }

    fn variants(g: &GrayImage) -> Vec<(&'static str, GrayImage)> {
        let inverted = GrayImage::from_fn(g.width(), g.height(), |x, y| {
            image::Luma([255 - g.get_pixel(x, y)[0]])
        });
        let half = GrayImage::from_fn(g.width() / 2, g.height() / 2, |x, y| {
            let s: u32 = [(0, 0), (1, 0), (0, 1), (1, 1)]
                .iter()
                .map(|&(dx, dy)| u32::from(g.get_pixel(2 * x + dx, 2 * y + dy)[0]))
                .sum();
            image::Luma([(s / 4) as u8])
        });
        vec![("plain", g.clone()), ("inverted", inverted), ("half", half)]
    }

    /// Random blocks of 1–6 px: finder-like runs everywhere, many candidates (the texture
    /// negatives' case).
    fn texture(w: u32, h: u32, seed: u64) -> GrayImage {
        let mut s = seed;
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as u32
        };
        let cell = 1 + next() % 6;
        let cols = w.div_ceil(cell);
        let cells: Vec<u8> = (0..cols * h.div_ceil(cell))
            .map(|_| if next() % 2 == 0 { 30 } else { 220 })
            .collect();
        GrayImage::from_fn(w, h, |x, y| {
            image::Luma([cells[((y / cell) * cols + x / cell) as usize]])
        })
    }

    #[test]
    fn found_pattern_cross_matches_rxing() {
        // Every tuple up to 9:9:27:9:9 and scaled ones (long runs of big modules).
        for (a, b) in [(40u32, 41u32), (100, 97), (7, 300)] {
            for c in [3 * a - 20, 3 * a, 3 * a + 55, 3 * b + 7] {
                for sc in [[a, b, c, a, b], [b, a, c, b, a], [a, a, c, b, b]] {
                    assert_eq!(
                        found_pattern_cross(&sc, 0.0),
                        FinderPatternFinder::foundPatternCross(&sc, 0.0),
                        "{sc:?}"
                    );
                }
            }
        }
        // Counts near a finder's at module sizes up to 80 px, at random.
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u32| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % u64::from(n)) as u32
        };
        for _ in 0..2_000_000 {
            let m = 1 + next(80);
            let mut near = |k: u32| (k * m / 3).saturating_add(next(2 * k * m + 3));
            let sc = [near(3), near(3), near(9), near(3), near(3)];
            assert_eq!(
                found_pattern_cross(&sc, 0.0),
                FinderPatternFinder::foundPatternCross(&sc, 0.0),
                "{sc:?}"
            );
        }
        for a in 0..9u32 {
            for b in 0..9 {
                for c in 0..28 {
                    for d in 0..9 {
                        for e in 0..9 {
                            let sc = [a, b, c, d, e];
                            for min in [0.0, 1.5] {
                                assert_eq!(
                                    found_pattern_cross(&sc, min),
                                    FinderPatternFinder::foundPatternCross(&sc, min),
                                    "{sc:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn java_port_matches_rxing() {
        let mut checked = 0;
        let mut found = 0;
        for seed in 0..24u64 {
            let g = texture(300 + 37 * seed as u32, 260 + 29 * seed as u32, seed);
            for (name, v) in variants(&g) {
                found += usize::from(check(&v, &format!("texture {seed} {name}")));
                checked += 1;
            }
        }
        // The shared corpus (every slip kind), and any folder in JAVA_PORT_DIR (e.g. a fresh
        // draw of `scripts/bench-hard-families`).
        for (p, g) in crate::working_images() {
            for (name, v) in variants(&g) {
                found += usize::from(check(&v, &format!("{} {name}", p.display())));
                checked += 1;
            }
        }
        assert!(found > 0 && found < checked, "{found} of {checked}");
        eprintln!("java port: {checked} matrices, rxing found three finders in {found}");
    }
}
