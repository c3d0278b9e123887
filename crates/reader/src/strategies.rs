//! Preprocessing strategies, tried in order until one yields a QR code.

use std::borrow::Cow;

use image::imageops::FilterType;
use image::GrayImage;
use rxing::{BarcodeFormat, DecodeHints};

/// Longest side we feed to the detectors first: only phone photos (up to 3000×4600) shrink.
const WORK_SIDE: u32 = 2400;
/// Images whose short side is below this get upscaled tries (thumbnails).
const SMALL_SIDE: u32 = 1000;
/// Largest image scanned at full resolution as the last resort (phone photos are ~14 Mpx).
const FULL_RES_MAX_PIXELS: u64 = 16_000_000;
/// Short side from which the cheap first pass scans a 2×2-averaged copy (thumbnails, whose
/// modules are 1–2 px, skip it).
const CHEAP_HALF_MIN_SIDE: u32 = 700;
/// Mean luminance below which the image is taken for dark mode and tried inverted first.
const DARK_MEAN: u64 = 100;

type Prep = fn(&GrayImage) -> Option<GrayImage>;

/// The strategies after the plain image, in order. Each maps the working image (already
/// downscaled to at most `WORK_SIDE`) to a new image to scan, or `None` when it does not apply.
const STRATEGIES: &[(&str, Prep)] = &[
    // Dark mode: the QR is light-on-dark and both detectors look for dark finder patterns.
    ("inverted", |g| Some(invert(g))),
    // Noisy / moiré photos: averaging 2×2 blocks low-passes the noise and screen pattern.
    ("half", |g| {
        (g.width().min(g.height()) > 800).then(|| box_downscale(g, 2))
    }),
    // Thermal receipts: dots the printer missed speckle the modules with light holes that
    // break finder-pattern runs; a closing of the dark parts fills holes up to 4 px wide.
    ("close", |g| Some(close_dark(g, 2))),
    // Thumbnails: 1-2 px modules are too thin for finder-pattern scanning; smooth ×2 helps.
    ("bilinear2", |g| {
        (g.width().min(g.height()) < SMALL_SIDE).then(|| resize(g, 2, FilterType::Triangle))
    }),
    // Uneven light: binarize against a large-window local mean instead of the decoders' own.
    ("local-mean", |g| Some(local_mean_threshold(g, 0))),
    // Noise / blur: one global Otsu threshold does not fragment modules like local ones can.
    ("otsu", |g| Some(otsu_threshold(g))),
];

/// Try the plain image then every strategy, returning the texts of the first one that finds
/// any QR code together with the strategy's name.
pub(crate) fn run_named(full: &GrayImage) -> (Vec<String>, &'static str) {
    let work = fit(full, WORK_SIDE);
    let work: &GrayImage = &work;
    let plain_name = if work.dimensions() == full.dimensions() {
        "as-is"
    } else {
        "fit"
    };
    let dark = is_dark(work);
    // Cheap pass: rxing's binarizer is most of a scan and costs per pixel, so first try rxing
    // alone on a 2×2-averaged copy (a quarter of the pixels). Most slips end here; any miss
    // goes through the full sequence below, unchanged, at the full working resolution.
    // (Without TryHarder rxing is only ~15 % faster and misses ~1 slip in 5: not worth it.)
    // Dark mode is inverted (on the small copy) so the finder patterns are dark.
    if work.width().min(work.height()) >= CHEAP_HALF_MIN_SIDE {
        let mut half = box_downscale(work, 2);
        if dark {
            half.iter_mut().for_each(|p| *p = 255 - *p);
        }
        let found = scan_rxing(&half, true);
        if !found.is_empty() {
            return (found, if dark { "inverted-half" } else { "half-first" });
        }
    }
    if dark {
        // Dark-mode slips: inverted before the plain image.
        let found = scan(&invert(work));
        if !found.is_empty() {
            return (found, "inverted");
        }
    }
    let found = scan(work);
    if !found.is_empty() {
        return (found, plain_name);
    }
    for (name, prep) in STRATEGIES {
        if dark && *name == "inverted" {
            continue;
        }
        if let Some(img) = prep(work) {
            let found = scan(&img);
            if !found.is_empty() {
                return (found, name);
            }
        }
    }
    // Last resort for big photos: the full resolution (the QR may be small in the frame).
    // Capped so a hostile 40 Mpx upload cannot cost seconds of scanning.
    let pixels = u64::from(full.width()) * u64::from(full.height());
    if work.dimensions() != full.dimensions() && pixels <= FULL_RES_MAX_PIXELS {
        let found = scan(full);
        if !found.is_empty() {
            return (found, "full-res");
        }
    }
    (Vec::new(), "none")
}

pub(crate) fn run(full: &GrayImage) -> Vec<String> {
    run_named(full).0
}

fn is_dark(g: &GrayImage) -> bool {
    let n = u64::from(g.width()) * u64::from(g.height());
    n > 0 && g.iter().map(|&p| u64::from(p)).sum::<u64>() / n < DARK_MEAN
}

/// Both decoders on one image: rxing (zxing port) first, rqrr only if rxing finds nothing.
fn scan(g: &GrayImage) -> Vec<String> {
    let found = scan_rxing(g, true);
    if !found.is_empty() {
        return found;
    }
    scan_rqrr(g)
}

fn scan_rxing(g: &GrayImage, try_harder: bool) -> Vec<String> {
    let mut hints = DecodeHints {
        TryHarder: Some(try_harder),
        ..Default::default()
    };
    rxing::helpers::detect_in_luma_slice_with_hints(
        g.as_raw(),
        g.width(),
        g.height(),
        Some(BarcodeFormat::QR_CODE),
        &mut hints,
    )
    .map(|r| vec![r.getText().to_string()])
    .unwrap_or_default()
}

/// rqrr: all decodable grids, deduplicated, largest first.
fn scan_rqrr(g: &GrayImage) -> Vec<String> {
    let (w, h) = (g.width() as usize, g.height() as usize);
    let raw = g.as_raw();
    let mut prepared = rqrr::PreparedImage::prepare_from_greyscale(w, h, |x, y| raw[y * w + x]);
    let mut grids = prepared.detect_grids();
    // Bigger codes first: on a slip the payload QR is the prominent one.
    grids.sort_by_key(|g| {
        let b = &g.bounds;
        let span = (b[0].x - b[2].x).abs() + (b[0].y - b[2].y).abs();
        std::cmp::Reverse(span)
    });
    let mut out: Vec<String> = Vec::new();
    for grid in grids {
        if let Ok((_, text)) = grid.decode() {
            if !out.contains(&text) {
                out.push(text);
            }
        }
    }
    out
}

/// Downscale by an integer factor so the longest side is at most `max_side` (borrowed, not
/// copied, when it already fits).
fn fit(g: &GrayImage, max_side: u32) -> Cow<'_, GrayImage> {
    let side = g.width().max(g.height());
    if side <= max_side {
        return Cow::Borrowed(g);
    }
    Cow::Owned(box_downscale(g, side.div_ceil(max_side)))
}

/// Area-average downscale by an integer factor (also a low-pass filter against noise/moiré).
fn box_downscale(g: &GrayImage, f: u32) -> GrayImage {
    let (w, h) = (g.width() / f, g.height() / f);
    if f <= 1 || w == 0 || h == 0 {
        return g.clone();
    }
    let src = g.as_raw();
    let sw = g.width() as usize;
    let fu = f as usize;
    let n = (fu * fu) as u32;
    let mut out = vec![0u8; (w * h) as usize];
    if f == 2 {
        // The common case (cheap first pass, photo fit) without the generic accumulator.
        for (oy, orow) in out.chunks_exact_mut(w as usize).enumerate() {
            let r0 = src[2 * oy * sw..][..sw].chunks_exact(2);
            let r1 = src[(2 * oy + 1) * sw..][..sw].chunks_exact(2);
            for ((o, a), b) in orow.iter_mut().zip(r0).zip(r1) {
                let s = u16::from(a[0]) + u16::from(a[1]) + u16::from(b[0]) + u16::from(b[1]);
                *o = (s / 4) as u8;
            }
        }
        return GrayImage::from_raw(w, h, out).expect("buffer size matches");
    }
    let mut acc = vec![0u32; w as usize];
    for oy in 0..h as usize {
        acc.fill(0);
        for dy in 0..fu {
            let row = &src[(oy * fu + dy) * sw..][..sw];
            for (ox, a) in acc.iter_mut().enumerate() {
                *a += row[ox * fu..ox * fu + fu]
                    .iter()
                    .map(|&p| u32::from(p))
                    .sum::<u32>();
            }
        }
        for (ox, a) in acc.iter().enumerate() {
            out[oy * w as usize + ox] = (a / n) as u8;
        }
    }
    GrayImage::from_raw(w, h, out).expect("buffer size matches")
}

/// Morphological closing of the dark parts (min filter then max filter, square window of
/// radius `r`): fills light holes narrower than 2r+1 px inside dark areas, such as the dots a
/// thermal printer failed to print, without growing the modules.
fn close_dark(g: &GrayImage, r: u32) -> GrayImage {
    let dilated = rank_filter(g, r, false);
    rank_filter(&dilated, r, true)
}

/// Separable square min (`max == false`) or max filter of radius `r`.
fn rank_filter(g: &GrayImage, r: u32, max: bool) -> GrayImage {
    let (w, h) = (g.width() as usize, g.height() as usize);
    let r = r as usize;
    let pick = |a: u8, b: u8| if max { a.max(b) } else { a.min(b) };
    let src = g.as_raw();
    let mut tmp = vec![0u8; w * h];
    for y in 0..h {
        let row = &src[y * w..][..w];
        for x in 0..w {
            let (x0, x1) = (x.saturating_sub(r), (x + r + 1).min(w));
            tmp[y * w + x] = row[x0..x1].iter().copied().fold(row[x], pick);
        }
    }
    let mut out = vec![0u8; w * h];
    for y in 0..h {
        let (y0, y1) = (y.saturating_sub(r), (y + r + 1).min(h));
        for x in 0..w {
            out[y * w + x] = (y0..y1)
                .map(|yy| tmp[yy * w + x])
                .fold(tmp[y * w + x], pick);
        }
    }
    GrayImage::from_raw(w as u32, h as u32, out).expect("buffer size matches")
}

fn resize(g: &GrayImage, f: u32, filter: FilterType) -> GrayImage {
    image::imageops::resize(g, g.width() * f, g.height() * f, filter)
}

fn invert(g: &GrayImage) -> GrayImage {
    let mut out = g.clone();
    out.iter_mut().for_each(|p| *p = 255 - *p);
    out
}

/// Binarize with Otsu's global threshold (output is pure black/white).
fn otsu_threshold(g: &GrayImage) -> GrayImage {
    let mut hist = [0u64; 256];
    g.iter().for_each(|&p| hist[p as usize] += 1);
    let total: u64 = hist.iter().sum();
    let sum_all: f64 = hist
        .iter()
        .enumerate()
        .map(|(i, &c)| i as f64 * c as f64)
        .sum();
    let (mut w_b, mut sum_b, mut best, mut best_t) = (0u64, 0f64, -1f64, 128u8);
    for (t, &c) in hist.iter().enumerate() {
        w_b += c;
        if w_b == 0 {
            continue;
        }
        let w_f = total - w_b;
        if w_f == 0 {
            break;
        }
        sum_b += t as f64 * c as f64;
        let m_b = sum_b / w_b as f64;
        let m_f = (sum_all - sum_b) / w_f as f64;
        let between = w_b as f64 * w_f as f64 * (m_b - m_f) * (m_b - m_f);
        if between > best {
            best = between;
            best_t = t as u8;
        }
    }
    let mut out = g.clone();
    out.iter_mut()
        .for_each(|p| *p = if *p <= best_t { 0 } else { 255 });
    out
}

/// Binarize against the mean of a square window (~1/8 of the short side) minus `bias`.
fn local_mean_threshold(g: &GrayImage, bias: i32) -> GrayImage {
    let (w, h) = (g.width() as usize, g.height() as usize);
    let r = (w.min(h) / 16).max(4);
    // Integral image with a zero border row/column.
    let mut integ = vec![0u64; (w + 1) * (h + 1)];
    let src = g.as_raw();
    for y in 0..h {
        let mut row = 0u64;
        for x in 0..w {
            row += u64::from(src[y * w + x]);
            integ[(y + 1) * (w + 1) + x + 1] = integ[y * (w + 1) + x + 1] + row;
        }
    }
    let mut out = vec![0u8; w * h];
    for y in 0..h {
        let (y0, y1) = (y.saturating_sub(r), (y + r + 1).min(h));
        for x in 0..w {
            let (x0, x1) = (x.saturating_sub(r), (x + r + 1).min(w));
            let s = integ[y1 * (w + 1) + x1] + integ[y0 * (w + 1) + x0]
                - integ[y0 * (w + 1) + x1]
                - integ[y1 * (w + 1) + x0];
            let mean = (s / ((y1 - y0) * (x1 - x0)) as u64) as i32;
            out[y * w + x] = if i32::from(src[y * w + x]) < mean - bias {
                0
            } else {
                255
            };
        }
    }
    GrayImage::from_raw(w as u32, h as u32, out).expect("buffer size matches")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_downscale_by_two_matches_generic() {
        let (w, h) = (7u32, 5u32);
        let g = GrayImage::from_fn(w, h, |x, y| image::Luma([((x * 37 + y * 91) % 256) as u8]));
        let d = box_downscale(&g, 2);
        assert_eq!(d.dimensions(), (3, 2));
        for (x, y, p) in d.enumerate_pixels() {
            let s: u32 = [(0, 0), (1, 0), (0, 1), (1, 1)]
                .iter()
                .map(|(dx, dy)| u32::from(g.get_pixel(2 * x + dx, 2 * y + dy).0[0]))
                .sum();
            assert_eq!(u32::from(p.0[0]), s / 4);
        }
    }

    #[test]
    fn box_downscale_averages() {
        let g = GrayImage::from_raw(4, 2, vec![0, 255, 10, 20, 255, 0, 30, 40]).unwrap();
        let d = box_downscale(&g, 2);
        assert_eq!(d.dimensions(), (2, 1));
        assert_eq!(d.as_raw(), &vec![127, 25]);
    }

    #[test]
    fn otsu_splits_two_levels() {
        let g = GrayImage::from_raw(4, 1, vec![10, 20, 200, 210]).unwrap();
        assert_eq!(otsu_threshold(&g).as_raw(), &vec![0, 0, 255, 255]);
    }

    #[test]
    fn close_fills_small_light_holes_only() {
        // A dark 8×8 block with a 2×2 hole, on a light field: the hole fills, the block keeps
        // its size (the field stays light around it).
        let mut g = GrayImage::from_pixel(16, 16, image::Luma([255]));
        for y in 4..12 {
            for x in 4..12 {
                g.put_pixel(x, y, image::Luma([0]));
            }
        }
        for (x, y) in [(7, 7), (8, 7), (7, 8), (8, 8)] {
            g.put_pixel(x, y, image::Luma([255]));
        }
        let c = close_dark(&g, 2);
        assert_eq!(c.get_pixel(7, 7).0, [0]);
        assert_eq!(c.get_pixel(8, 8).0, [0]);
        assert_eq!(c.get_pixel(3, 3).0, [255]);
        assert_eq!(c.get_pixel(12, 8).0, [255]);
        assert_eq!(c.get_pixel(4, 4).0, [0]);
    }

    #[test]
    fn invert_and_upscale() {
        let g = GrayImage::from_raw(1, 1, vec![10]).unwrap();
        assert_eq!(invert(&g).as_raw(), &vec![245]);
        assert_eq!(resize(&g, 2, FilterType::Triangle).as_raw(), &vec![10; 4]);
    }
}

#[cfg(test)]
mod timing {
    use super::*;
    use std::time::Instant;

    /// `cargo test --release -p reader --lib scan_timing -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn scan_timing() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus/slips");
        for f in [
            "slip-0001-jpeg.jpg",
            "slip-0003-line.jpg",
            "slip-0008-clean.png",
            "slip-0002-small.jpg",
        ] {
            let Ok(bytes) = std::fs::read(format!("{dir}/{f}")) else {
                return;
            };
            let g = crate::decode_gray(&bytes, &crate::Limits::default()).unwrap();
            fn time(f: &str, label: &str, fun: impl Fn() -> usize) {
                let n = 10;
                let t = Instant::now();
                let mut k = 0;
                for _ in 0..n {
                    k += fun();
                }
                let ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
                eprintln!("{f:22} {label:14} {ms:6.2} ms ({k})");
            }
            time(f, "rxing harder", || scan_rxing(&g, true).len());
            time(f, "rxing fast", || scan_rxing(&g, false).len());
            time(f, "is_dark", || usize::from(is_dark(&g)));
            time(f, "binarize only", || {
                use rxing::Binarizer;
                let src =
                    rxing::Luma8LuminanceSource::new(g.as_raw().clone(), g.width(), g.height())
                        .unwrap();
                let b = rxing::common::HybridBinarizer::new(src);
                b.get_black_matrix()
                    .map(|m| m.getWidth() as usize)
                    .unwrap_or(0)
            });
        }
    }
}

#[cfg(test)]
mod cheap_pass_survey {
    use super::*;

    /// Which cheap first passes read which corpus images (not part of the default run).
    #[test]
    #[ignore]
    fn cheap_pass_survey() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus/slips");
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        let mut tally = std::collections::BTreeMap::<String, [usize; 5]>::new();
        for p in files {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name.ends_with(".json") {
                continue;
            }
            let fam = name
                .rsplit('-')
                .next()
                .unwrap()
                .split('.')
                .next()
                .unwrap()
                .to_string();
            let bytes = std::fs::read(&p).unwrap();
            let full = crate::decode_gray(&bytes, &crate::Limits::default()).unwrap();
            let work = fit(&full, WORK_SIDE).into_owned();
            let work = if is_dark(&work) { invert(&work) } else { work };
            let half = box_downscale(&work, 2);
            let r = [
                !scan_rxing(&half, false).is_empty(),
                !scan_rxing(&half, true).is_empty(),
                !scan_rxing(&work, false).is_empty(),
                !scan_rxing(&work, true).is_empty(),
                !scan_rqrr(&half).is_empty(),
            ];
            let t = tally.entry(fam).or_default();
            for (i, ok) in r.iter().enumerate() {
                t[i] += usize::from(*ok);
            }
        }
        eprintln!("family half-fast half-harder full-fast full-harder half-rqrr");
        for (f, t) in tally {
            eprintln!("{f:8} {t:?}");
        }
    }
}
