//! Fresh draws (issue 29): images nobody tuned on, drawn from a seed chosen at run time.
//!
//! The fixed families above are the sets the gate and the strategies were tuned on; a gate
//! tuned on 12 images per family generalised badly. Here every run draws new images of many
//! kinds — whole slips photographed in a larger frame with the QR at 3–6 px per module,
//! perspective up to ~15°, any rotation, thermal prints, photographed screens, chat-app JPEG,
//! thumbnails, dark mode — plus negatives (photos without a QR, payment QRs that are not
//! slips, 1D barcodes, QR-like texture). The seed is printed; `RECALL_SEED=<n>` replays it.
//!
//! - `recall_property` (default test run): a small draw, asserting that the default scan
//!   reads every image the exhaustive scan (`Limits::scan_exhaustive`) reads, never a wrong
//!   payload; and the same on every seed that ever failed (`REGRESSION_SEEDS`).
//! - `write_fresh` (`FRESH_OUT=<dir>`, from `scripts/bench-hard-families`): the bench's draw,
//!   ≥ 1,000 positives and ≥ 200 negatives, with a `manifest.json` `[{file, payload, family}]`
//!   (`payload` empty for negatives).

use super::*;

/// The positive kinds (each an equal share of a draw) and the negative ones.
pub(super) const POSITIVE_KINDS: [&str; 8] = [
    "f-print",
    "f-thermal",
    "f-screen",
    "f-rotated",
    "f-persp",
    "f-chat",
    "f-thumb",
    "f-dark",
];
pub(super) const NEGATIVE_KINDS: [&str; 4] = ["n-photo", "n-payment", "n-barcode", "n-texture"];

/// Seeds on which the default scan once missed an image the exhaustive scan read (or read a
/// wrong payload), with the images that failed (kind, index in the draw): replayed on every
/// run, each image alone, so a failure found in a bench-sized draw costs a few reads here.
const REGRESSION_SEEDS: &[(u64, &str, usize)] = &[
    // 2026-11-27, `scripts/bench-hard-families`: two QR regions' passes spent the pass budget
    // before `local-mean`, which read them (fixed: region passes are counted apart).
    (1_158_923_811, "f-thermal", 85),
    (1_158_923_811, "f-thermal", 118),
    // 2026-11-27, `scripts/bench-hard-families` (FRESH_PER_KIND=40): read exhaustively in a
    // QR region that the region budget (64 passes, 3 working images of pixels) cut off after
    // text triples' regions (raised to 160 passes and 6 working images).
    (3_495_981_900, "f-screen", 14),
    (3_495_981_900, "f-screen", 22),
    // 2026-11-27, `recall_property` (RECALL_PER_KIND=16): read exhaustively in the de-moiré
    // look's third QR region, after two regions of false triples spanning much of the photo
    // had spent the region pixels (regions the size of a slip's code now go first).
    (271_814_768, "f-screen", 10),
    // 2026-11-27, `recall_property`: the timing check skipped other combinations of centres
    // at the chosen triple's place (they give no new region, but their timing patterns count);
    // the whole-image `local-mean` that reads it never ran.
    (282_593_044, "f-thermal", 13),
    // 2026-11-27, A/B against main (FRESH_PER_KIND=60): skipping every QR region over twice a
    // slip code's modules² lost a screen whose moiré triple's big region held the code, read by
    // its ×2 upscale (now only other triples' big regions are skipped).
    (555_002, "f-screen", 26),
    // 2026-11-27, A/B against main on a bench draw: ending the read when the timing check's
    // "yes" came only from its bound on triples lost a dark-mode slip that the whole-image
    // `inverted` pass reads (reverted).
    (299_637_585, "f-dark", 28),
];

/// Images per positive kind in the default test run's draw (one per negative kind).
const DRAW_PER_KIND: usize = 5;

pub(super) struct Drawn {
    pub file: String,
    /// Empty for a negative (no slip payload expected).
    pub payload: String,
    pub kind: &'static str,
    pub bytes: Vec<u8>,
}

/// A seed for this run: `RECALL_SEED` when set, else from the clock and the process id.
pub(super) fn run_seed() -> u64 {
    if let Ok(s) = std::env::var("RECALL_SEED") {
        return s.trim().parse().expect("RECALL_SEED=<u64>");
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut r = Rng(t ^ (u64::from(std::process::id()) << 32) | 1);
    r.next_u64() % 1_000_000_000
}

/// `per_kind` images of each positive kind and `neg_per_kind` of each negative kind, drawn
/// from `seed` (image `i` from its own stream, so a draw's first images do not depend on its
/// size).
pub(super) fn draw(seed: u64, per_kind: usize, neg_per_kind: usize) -> Vec<Drawn> {
    let mut out = Vec::new();
    for (k, kind) in POSITIVE_KINDS.iter().chain(&NEGATIVE_KINDS).enumerate() {
        let n = if k < POSITIVE_KINDS.len() {
            per_kind
        } else {
            neg_per_kind
        };
        for i in 0..n {
            out.push(draw_one(seed, kind, i));
        }
    }
    out
}

fn draw_one(seed: u64, kind: &'static str, i: usize) -> Drawn {
    let mut rng = Rng::new(&format!("{seed}/{kind}"), i);
    let negative = kind.starts_with("n-");
    let payload = if negative {
        String::new()
    } else {
        payload(&mut rng)
    };
    let (bytes, ext) = match kind {
        "f-print" => framed(&mut rng, &payload, Look::Print),
        "f-thermal" => framed(&mut rng, &payload, Look::Thermal),
        "f-screen" => framed(&mut rng, &payload, Look::Screen),
        "f-rotated" => framed(&mut rng, &payload, Look::Rotated),
        "f-persp" => framed(&mut rng, &payload, Look::Perspective),
        "f-chat" => chat(&mut rng, &payload),
        "f-thumb" => thumbnail(&mut rng, &payload),
        "f-dark" => dark_mode(&mut rng, &payload),
        "n-photo" => neg_photo(&mut rng),
        "n-payment" => neg_payment(&mut rng),
        "n-barcode" => neg_barcode(&mut rng),
        "n-texture" => neg_texture(&mut rng),
        _ => unreachable!("unknown kind {kind}"),
    };
    Drawn {
        file: format!("{kind}-{i:04}.{ext}"),
        payload,
        kind,
        bytes,
    }
}

// ---------------------------------------------------------------------------------------------
// A whole slip page (header, logo, text rows, amount, the QR in a lower part taking a fifth to
// two fifths of the width), drawn at `u` px per module.

struct PageLook {
    page: Px,
    header: Px,
    text: Px,
    dark: Px,
}

fn page_with_code(rng: &mut Rng, code_text: &str, u: u32, look: &PageLook) -> Img {
    let code = QrCode::with_error_correction_level(code_text.as_bytes(), EcLevel::M)
        .expect("payload fits a QR");
    let n = code.width() as u32;
    let qr_px = (n + 4) * u;
    let frac = rng.range(0.22, 0.42);
    let page_w = ((qr_px as f32 / frac) as u32).max(qr_px + 4 * u);
    let page_h = (page_w as f32 * rng.range(1.3, 1.8)) as u32;
    let mut page = Img::new(page_w, page_h, look.page);
    page.fill_rect(0, 0, page_w, page_h / 10, look.header);
    let logo = page_h / 16;
    page.fill_rect(page_w / 20, page_h / 80, logo, logo, look.page);
    let row_h = (page_h / 70).max(3);
    let qr_top = page_h - qr_px - (page_h / 12).max(2 * u);
    let mut y = page_h / 10 + 3 * row_h;
    let mut k = 0;
    while y + 3 * row_h < qr_top {
        let h = if k == 3 { row_h * 2 } else { row_h };
        let lw = (page_w as f32 * rng.range(0.15, 0.35)) as u32;
        let rw = (page_w as f32 * rng.range(0.2, 0.4)) as u32;
        page.fill_rect(page_w / 16, y, lw, h, look.text);
        page.fill_rect(page_w - page_w / 16 - rw, y, rw, h, look.text);
        y += h + row_h * 2;
        k += 1;
    }
    let ox = match rng.below(3) {
        0 => (page_w - qr_px) / 2,
        1 => page_w - qr_px - page_w / 16,
        _ => page_w / 16,
    };
    page.fill_rect(ox, qr_top, qr_px, qr_px, look.page);
    for (j, c) in code.to_colors().iter().enumerate() {
        if *c == Color::Dark {
            let (mx, my) = (j as u32 % n + 2, j as u32 / n + 2);
            page.fill_rect(ox + mx * u, qr_top + my * u, u, u, look.dark);
        }
    }
    page
}

fn light_look(rng: &mut Rng) -> PageLook {
    let page = rng.range(238.0, 255.0);
    PageLook {
        page: [page; 3],
        header: HEADERS[rng.below(HEADERS.len())],
        text: [rng.range(60.0, 170.0); 3],
        dark: [rng.range(0.0, 40.0); 3],
    }
}

// ---------------------------------------------------------------------------------------------
// The camera: a homography from the frame to the page.

/// The 3×3 homography (row-major, h33 = 1) taking each `from[i]` to `to[i]`.
fn homography(from: [(f32, f32); 4], to: [(f32, f32); 4]) -> [f64; 9] {
    let mut a = [[0f64; 9]; 8];
    for (i, (&(x, y), &(u, v))) in from.iter().zip(&to).enumerate() {
        let (x, y, u, v) = (f64::from(x), f64::from(y), f64::from(u), f64::from(v));
        a[2 * i] = [x, y, 1.0, 0.0, 0.0, 0.0, -u * x, -u * y, u];
        a[2 * i + 1] = [0.0, 0.0, 0.0, x, y, 1.0, -v * x, -v * y, v];
    }
    // Gauss–Jordan with partial pivoting.
    for c in 0..8 {
        let p = (c..8)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .expect("rows");
        a.swap(c, p);
        let d = a[c][c];
        a[c].iter_mut().for_each(|v| *v /= d);
        let pivot = a[c];
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c];
                row.iter_mut().zip(&pivot).for_each(|(v, p)| *v -= f * p);
            }
        }
    }
    let mut h = [1.0; 9];
    for (i, row) in a.iter().enumerate() {
        h[i] = row[8];
    }
    h
}

fn apply(h: &[f64; 9], x: f32, y: f32) -> (f32, f32) {
    let (x, y) = (f64::from(x), f64::from(y));
    let w = h[6] * x + h[7] * y + h[8];
    (
        ((h[0] * x + h[1] * y + h[2]) / w) as f32,
        ((h[3] * x + h[4] * y + h[5]) / w) as f32,
    )
}

/// The page photographed into a `fw`×`fh` frame: scaled by `scale`, turned by `rot` degrees,
/// its corners pushed by up to `persp` of its size (a tilt of the camera: ~0.13 for 15°),
/// somewhere in the frame; outside it, `bg`.
fn photograph(
    rng: &mut Rng,
    page: &Img,
    (fw, fh): (u32, u32),
    scale: f32,
    rot: f32,
    persp: f32,
    bg: impl Fn(u32, u32) -> Px,
) -> Img {
    let (pw, ph) = (page.w as f32 * scale, page.h as f32 * scale);
    let (c, s) = (rot.to_radians().cos(), rot.to_radians().sin());
    // Room the turned page needs; its centre anywhere that keeps it (mostly) in the frame.
    let (ew, eh) = (
        (pw * c.abs() + ph * s.abs()) / 2.0,
        (pw * s.abs() + ph * c.abs()) / 2.0,
    );
    let cx = if fw as f32 > 2.0 * ew {
        rng.range(ew, fw as f32 - ew)
    } else {
        fw as f32 / 2.0
    };
    let cy = if fh as f32 > 2.0 * eh {
        rng.range(eh, fh as f32 - eh)
    } else {
        fh as f32 / 2.0
    };
    // A tilt about a random axis: the corners on one side move in, the other side's out.
    let axis = rng.range(0.0, 2.0 * PI);
    let (ax, ay) = (axis.cos(), axis.sin());
    let k = persp * rng.range(0.5, 1.0);
    let corners = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)].map(|(u, v): (f32, f32)| {
        let (dx, dy) = ((u - 0.5) * pw, (v - 0.5) * ph);
        // Along the tilt axis the far side shrinks, across it the near side grows.
        let along = (dx * ax + dy * ay) / (pw.max(ph) / 2.0);
        let g = 1.0 + k * along;
        let (dx, dy) = (dx * g, dy * g);
        let jitter = 0.01 * pw.min(ph);
        (
            cx + c * dx - s * dy + rng.range(-jitter, jitter),
            cy + s * dx + c * dy + rng.range(-jitter, jitter),
        )
    });
    let src = [
        (0.0, 0.0),
        (page.w as f32, 0.0),
        (page.w as f32, page.h as f32),
        (0.0, page.h as f32),
    ];
    let h = homography(corners, src);
    page.warp(fw, fh, |x, y| apply(&h, x, y), bg)
}

/// A flat grey or dark surround with a little low-frequency texture.
fn surround(rng: &mut Rng) -> impl Fn(u32, u32) -> Px {
    let base = match rng.below(4) {
        0 => rng.range(20.0, 50.0),
        1 => rng.range(60.0, 110.0),
        2 => rng.range(120.0, 170.0),
        _ => rng.range(40.0, 140.0),
    };
    let tint = [rng.range(0.9, 1.1), 1.0, rng.range(0.85, 1.1)];
    let texture = low_frequency_texture(rng, (0.005, 0.03), 0.08);
    move |x, y| {
        let t = texture(x, y);
        [base * tint[0] * t, base * tint[1] * t, base * tint[2] * t]
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Look {
    Print,
    Thermal,
    Screen,
    Rotated,
    Perspective,
}

/// A whole slip photographed in a 1200–1600 px wide frame, its QR at 3–6 px per module.
fn framed(rng: &mut Rng, payload: &str, look: Look) -> (Vec<u8>, &'static str) {
    let module = rng.range(3.0, 6.0);
    // Drawn a little finer than it is photographed, so the camera's resampling blurs edges.
    let u = (module * 1.3).ceil() as u32;
    let page_look = match look {
        Look::Thermal => {
            let paper = rng.range(175.0, 235.0);
            let ink = paper - rng.range(50.0, 120.0);
            PageLook {
                page: [paper, paper - 2.0, paper - 8.0],
                header: [ink; 3],
                text: [ink + 20.0; 3],
                dark: [ink; 3],
            }
        }
        Look::Screen => {
            let mut l = light_look(rng);
            l.page = [rng.range(215.0, 245.0); 3];
            l.dark = [rng.range(25.0, 60.0); 3];
            l
        }
        _ => light_look(rng),
    };
    let mut page = page_with_code(rng, payload, u, &page_look);
    if look == Look::Thermal {
        thermal_print(rng, &mut page, page_look.page[0], page_look.dark[0]);
    }
    let fw = 1200 + rng.below(401) as u32;
    let fh = (fw as f32 * rng.range(0.7, 1.35)) as u32;
    let rot = match look {
        Look::Rotated => rng.range(0.0, 360.0),
        _ => rng.range(-8.0, 8.0),
    };
    let persp = match look {
        Look::Perspective => rng.range(0.08, 0.13),
        _ => rng.range(0.0, 0.08),
    };
    let scale = module / u as f32;
    let bg = surround(rng);
    let mut photo = photograph(rng, &page, (fw, fh), scale, rot, persp, bg);
    if look == Look::Screen {
        screen_artefacts(rng, &mut photo);
    }
    let lo = rng.range(0.55, 0.95);
    let light = lighting(rng, fw, fh, lo);
    photo.map_px(|x, y, p| p.map(|v| v * light(x, y)));
    if rng.below(2) == 0 {
        photo = photo.box_blur(1);
    }
    photo.noisy_jpeg(rng, (1.0, 6.0), (55, 36))
}

/// Thermal print: missing dots, ink that varies, light streaks down the roll (dead head
/// elements, worn patches), a faded band.
fn thermal_print(rng: &mut Rng, page: &mut Img, paper: f32, ink: f32) {
    let p = rng.range(0.0, 0.2);
    let dot = 2;
    for by in (0..page.h).step_by(dot) {
        for bx in (0..page.w).step_by(dot) {
            if page.at(bx, by)[0] > (paper + ink) / 2.0 {
                continue;
            }
            let v = if rng.unit() < p {
                paper
            } else {
                (ink * rng.range(0.85, 1.2)).min(paper)
            };
            page.fill_rect(bx, by, dot as u32, dot as u32, [v; 3]);
        }
    }
    for _ in 0..rng.below(4) {
        let x0 = rng.below(page.w as usize) as u32;
        let wd = 1 + rng.below(3) as u32;
        let fade = rng.range(0.4, 1.0);
        for y in 0..page.h {
            for x in x0..(x0 + wd).min(page.w) {
                let v = page.at(x, y)[0];
                page.set(x, y, [v + (paper - v) * fade; 3]);
            }
        }
    }
    let (y0, band) = (rng.range(0.0, 1.0), rng.range(0.1, 0.5));
    let fade = rng.range(0.0, 0.4);
    let h = page.h as f32;
    page.map_px(|_, y, px| {
        let t = (y as f32 / h - y0).abs() / band;
        let f = if t < 1.0 { fade * (1.0 - t) } else { 0.0 };
        px.map(|v| v + (paper - v) * f)
    });
}

/// A photographed screen: moiré from two beating gratings, sub-pixel colour stripes, glare.
fn screen_artefacts(rng: &mut Rng, photo: &mut Img) {
    let (p1, a1) = (rng.range(3.0, 9.0), rng.range(0.0, PI));
    let (p2, a2) = (p1 * rng.range(1.05, 1.25), a1 + rng.range(0.05, 0.3));
    let amp = rng.range(0.1, 0.4);
    let stripe = rng.range(0.0, 0.3);
    let (gx, gy) = (
        rng.range(0.0, photo.w as f32),
        rng.range(0.0, photo.h as f32),
    );
    let gr = rng.range(0.1, 0.4) * photo.w as f32;
    let glare = rng.range(0.0, 120.0);
    photo.map_px(|x, y, p| {
        let (xf, yf) = (x as f32, y as f32);
        let g1 = (2.0 * PI * (xf * a1.cos() + yf * a1.sin()) / p1).sin();
        let g2 = (2.0 * PI * (xf * a2.cos() + yf * a2.sin()) / p2).sin();
        let m = 1.0 + amp * 0.5 * (g1 + g2);
        let d2 = ((xf - gx).powi(2) + (yf - gy).powi(2)) / (gr * gr);
        let add = glare * (-d2).exp();
        let sub = x as usize % 3;
        let mut out = p;
        for (k, v) in out.iter_mut().enumerate() {
            let s = if k == sub {
                1.0 + stripe
            } else {
                1.0 - stripe / 2.0
            };
            *v = *v * m * s + add;
        }
        out
    });
}

/// A slip screenshot sent through a chat app: resized to 720–1280 px wide (3–6 px per
/// module kept), JPEG quality 40–80, sometimes twice.
fn chat(rng: &mut Rng, payload: &str) -> (Vec<u8>, &'static str) {
    let u = 4 + rng.below(5) as u32;
    let look = light_look(rng);
    let page = page_with_code(rng, payload, u, &look);
    let module = rng.range(3.0, 6.0).min(u as f32);
    let f = module / u as f32;
    let rgb = page.to_rgb();
    let (w, h) = (
        (page.w as f32 * f).round() as u32,
        (page.h as f32 * f).round() as u32,
    );
    let mut small = image::imageops::resize(&rgb, w, h, FilterType::Triangle);
    if rng.below(3) == 0 {
        let (bytes, _) = jpeg(&Img::from_rgb(&small), 60 + rng.below(30) as u8);
        small = image::load_from_memory(&bytes).expect("own JPEG").to_rgb8();
    }
    jpeg(&Img::from_rgb(&small), 40 + rng.below(41) as u8)
}

/// A whole slip as a chat thumbnail: 1.5–3 px per module, JPEG quality 40–80.
fn thumbnail(rng: &mut Rng, payload: &str) -> (Vec<u8>, &'static str) {
    let u = 6;
    let look = light_look(rng);
    let page = page_with_code(rng, payload, u, &look);
    let module = rng.range(1.5, 3.0);
    let f = module / u as f32;
    let (w, h) = (
        (page.w as f32 * f).round() as u32,
        (page.h as f32 * f).round() as u32,
    );
    let filter = if rng.below(2) == 0 {
        FilterType::Triangle
    } else {
        FilterType::Lanczos3
    };
    let small = image::imageops::resize(&page.to_rgb(), w, h, filter);
    jpeg(&Img::from_rgb(&small), 40 + rng.below(41) as u8)
}

/// Dark mode: light modules on a dark page, as a screenshot (PNG or JPEG) or photographed.
fn dark_mode(rng: &mut Rng, payload: &str) -> (Vec<u8>, &'static str) {
    let bg = rng.range(10.0, 45.0);
    let look = PageLook {
        page: [bg, bg, bg + 4.0],
        header: HEADERS[rng.below(HEADERS.len())].map(|v| v * 0.35 + 10.0),
        text: [rng.range(90.0, 180.0); 3],
        dark: [rng.range(bg + 70.0, 240.0); 3],
    };
    let module = rng.range(3.0, 6.0);
    if rng.below(2) == 0 {
        let u = module.round() as u32;
        let page = page_with_code(rng, payload, u, &look);
        return if rng.below(2) == 0 {
            png(&page)
        } else {
            jpeg(&page, 50 + rng.below(41) as u8)
        };
    }
    let u = (module * 1.3).ceil() as u32;
    let page = page_with_code(rng, payload, u, &look);
    let fw = 1000 + rng.below(601) as u32;
    let fh = (fw as f32 * rng.range(0.7, 1.35)) as u32;
    let bg = surround(rng);
    let rot = rng.range(-10.0, 10.0);
    let persp = rng.range(0.0, 0.1);
    let mut photo = photograph(rng, &page, (fw, fh), module / u as f32, rot, persp, bg);
    photo.noisy_jpeg(rng, (1.0, 5.0), (55, 36))
}

// ---------------------------------------------------------------------------------------------
// Negatives: no slip payload is the right answer.

/// A frame of blobs, gradients and a text-like page: a photo without any code.
fn neg_photo(rng: &mut Rng) -> (Vec<u8>, &'static str) {
    let fw = 600 + rng.below(1001) as u32;
    let fh = (fw as f32 * rng.range(0.6, 1.5)) as u32;
    let bg = surround(rng);
    let mut img = Img::new(fw, fh, [0.0; 3]);
    img.map_px(|x, y, _| bg(x, y));
    for _ in 0..5 + rng.below(20) {
        let (x, y) = (rng.below(fw as usize) as u32, rng.below(fh as usize) as u32);
        let (w, h) = (
            10 + rng.below(fw as usize / 3) as u32,
            10 + rng.below(fh as usize / 3) as u32,
        );
        let c = [
            rng.range(0.0, 255.0),
            rng.range(0.0, 255.0),
            rng.range(0.0, 255.0),
        ];
        img.fill_rect(x, y, w, h, c);
    }
    for r in 0..rng.below(30) as u32 {
        let y = fh / 10 + r * (fh / 40).max(4);
        let len = (fw as f32 * rng.range(0.1, 0.6)) as u32;
        img.fill_rect(
            fw / 12,
            y,
            len,
            (fh / 120).max(2),
            [rng.range(0.0, 90.0); 3],
        );
    }
    let mut img = img.box_blur(1);
    img.noisy_jpeg(rng, (2.0, 10.0), (50, 41))
}

/// A payment QR (PromptPay-like, not a slip) on a page, photographed: the reader may return
/// its text, never a slip payload.
fn neg_payment(rng: &mut Rng) -> (Vec<u8>, &'static str) {
    let phone: String = (0..9)
        .map(|_| char::from(b'0' + rng.below(10) as u8))
        .collect();
    let text = format!(
        "00020101021129370016A000000677010111011300660{phone}5802TH53037646304{:04X}",
        rng.below(0x10000)
    );
    assert!(slip_qr::parse_bank_slip(&text).is_err(), "{text}");
    let module = rng.range(3.0, 6.0);
    let u = (module * 1.3).ceil() as u32;
    let look = light_look(rng);
    let page = page_with_code(rng, &text, u, &look);
    let fw = 1000 + rng.below(601) as u32;
    let fh = (fw as f32 * rng.range(0.7, 1.35)) as u32;
    let bg = surround(rng);
    let rot = rng.range(-10.0, 10.0);
    let mut photo = photograph(rng, &page, (fw, fh), module / u as f32, rot, 0.05, bg);
    photo.noisy_jpeg(rng, (1.0, 5.0), (55, 36))
}

/// A 1D barcode (random bars and spaces, 1–4 units wide) on a receipt-like page.
fn neg_barcode(rng: &mut Rng) -> (Vec<u8>, &'static str) {
    let unit = 2 + rng.below(3) as u32;
    let look = light_look(rng);
    let (pw, ph) = (500 + rng.below(500) as u32, 700 + rng.below(700) as u32);
    let mut page = Img::new(pw, ph, look.page);
    page.fill_rect(0, 0, pw, ph / 10, look.header);
    let (mut x, y0, bh) = (pw / 10, ph * 2 / 3, ph / 8);
    let mut bar = true;
    while x < pw * 9 / 10 {
        let w = unit * (1 + rng.below(4) as u32);
        if bar {
            page.fill_rect(x, y0, w, bh, look.dark);
        }
        bar = !bar;
        x += w;
    }
    let fw = 900 + rng.below(701) as u32;
    let fh = (fw as f32 * rng.range(0.7, 1.35)) as u32;
    let bg = surround(rng);
    let scale = rng.range(0.6, 1.2).min(fw as f32 / pw as f32 * 0.9);
    let rot = rng.range(-15.0, 15.0);
    let mut photo = photograph(rng, &page, (fw, fh), scale, rot, 0.06, bg);
    photo.noisy_jpeg(rng, (1.0, 6.0), (55, 36))
}

/// A slip-like page whose QR is replaced by random modules with no finder patterns.
fn neg_texture(rng: &mut Rng) -> (Vec<u8>, &'static str) {
    let u = 3 + rng.below(4) as u32;
    let look = light_look(rng);
    let (pw, ph) = (
        120 * u + rng.below(200) as u32,
        180 * u + rng.below(300) as u32,
    );
    let mut page = Img::new(pw, ph, look.page);
    page.fill_rect(0, 0, pw, ph / 10, look.header);
    let (ox, oy) = (pw / 3, ph / 2);
    for my in 0..29 {
        for mx in 0..29 {
            if rng.below(2) == 0 {
                page.fill_rect(ox + mx * u, oy + my * u, u, u, look.dark);
            }
        }
    }
    page.noisy_jpeg(rng, (1.0, 6.0), (50, 41))
}

// ---------------------------------------------------------------------------------------------

/// What one read of a drawn image gave: whether the expected payload came out; panics on a
/// wrong slip payload.
fn reads(s: &Drawn, limits: &Limits) -> bool {
    // Checked for a wrong slip even when none is expected (a negative has no payload).
    let read = reads_payload(&s.bytes, &s.payload, limits, &s.file);
    !s.payload.is_empty() && read
}

/// The images of `drawn` that the exhaustive scan reads and the default scan does not. The
/// default's last-resort time cap is lifted: the gate and the pass budget are under test here,
/// not the machine's load.
fn gate_misses(drawn: Vec<Drawn>) -> Vec<String> {
    let default = Limits {
        scan_time: std::time::Duration::from_secs(3600),
        ..Limits::default()
    };
    let exhaustive = Limits {
        scan_exhaustive: true,
        ..Limits::default()
    };
    let mut missed = Vec::new();
    for s in drawn {
        if !reads(&s, &default) && reads(&s, &exhaustive) {
            missed.push(s.file);
        }
    }
    missed
}

/// Recall is safe by construction: on a fresh draw, the default scan (gate, early exits, pass
/// budget) reads every image the exhaustive scan reads. A failure names the seed to replay
/// (`RECALL_SEED=<seed> cargo test -p reader --test it recall_property`) and to add to
/// `REGRESSION_SEEDS`.
#[test]
fn recall_property() {
    let seed = run_seed();
    eprintln!("recall_property: RECALL_SEED={seed}");
    // `RECALL_PER_KIND` draws more, to hunt for misses (the default keeps CI short).
    let per = std::env::var("RECALL_PER_KIND").map_or(DRAW_PER_KIND, |v| v.parse().unwrap());
    let missed = gate_misses(draw(seed, per, per.div_ceil(DRAW_PER_KIND)));
    assert!(
        missed.is_empty(),
        "RECALL_SEED={seed}: read exhaustively but not by default: {missed:?}"
    );
}

/// Every seed that ever failed `recall_property`.
#[test]
fn recall_regressions() {
    let drawn = REGRESSION_SEEDS
        .iter()
        .map(|&(seed, kind, i)| {
            let kind = POSITIVE_KINDS.iter().find(|k| **k == kind).expect("a kind");
            draw_one(seed, kind, i)
        })
        .collect();
    let missed = gate_misses(drawn);
    assert!(missed.is_empty(), "{missed:?} (seeds in REGRESSION_SEEDS)");
}

/// The thermal prints behind the wide QR region (`strategies::small_triple`, issue 29 round
/// four): on seed 1665496525 WeChat's reader (two also zxing-cpp) read them and we did not; the
/// gate's chosen triple was one real finder and speckle inside the code (or three such), whose
/// region cut the code off. They read now, by default.
#[test]
fn the_wide_region_reads_the_thermal_prints_it_was_made_for() {
    let default = Limits {
        scan_time: std::time::Duration::from_secs(3600),
        ..Limits::default()
    };
    let missed: Vec<String> = [0, 7, 14, 15, 19]
        .into_iter()
        .map(|i| draw_one(1_665_496_525, "f-thermal", i))
        .filter(|s| !reads(s, &default))
        .map(|s| s.file)
        .collect();
    assert!(missed.is_empty(), "seed 1665496525: not read: {missed:?}");
}

/// Images only rxing's Java-port QR detector reads (issue 29 round four): dropping it (it runs
/// after the C++-port one on every failing pass) lost this thermal print's region pass, and
/// keeping it on region passes alone lost this screen's plain pass. Both read by main.
#[test]
fn reads_only_rxings_java_port_detector_makes_stay_read() {
    let default = Limits {
        scan_time: std::time::Duration::from_secs(3600),
        ..Limits::default()
    };
    let missed: Vec<String> = [
        (3_230_258_786, "f-thermal", 21),
        (23_429_082, "f-screen", 36),
    ]
    .into_iter()
    .map(|(seed, kind, i)| draw_one(seed, kind, i))
    .filter(|s| !reads(s, &default))
    .map(|s| s.file)
    .collect();
    assert!(missed.is_empty(), "not read: {missed:?}");
}

/// Writes the bench's fresh draw to `$FRESH_OUT` (nothing when unset): `FRESH_PER_KIND`
/// (default 130) positives per kind, `FRESH_NEG_PER_KIND` (default 60) negatives per kind,
/// from `RECALL_SEED` or a new seed, written to `seed.txt` beside the manifest; `FRESH_KINDS`
/// (comma-separated) limits the kinds drawn.
#[test]
fn write_fresh() {
    let Some(dir) = std::env::var_os("FRESH_OUT") else {
        return;
    };
    let num = |k: &str, d: usize| std::env::var(k).map_or(d, |v| v.parse().expect(k));
    let (per, neg) = (num("FRESH_PER_KIND", 130), num("FRESH_NEG_PER_KIND", 60));
    let seed = run_seed();
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).expect("create FRESH_OUT");
    // The kinds drawn on both cores: each kind's images are independent of the others'.
    // `FRESH_KINDS=f-screen,n-photo` draws only those kinds (the same images as in a full draw).
    let only = std::env::var("FRESH_KINDS").unwrap_or_default();
    let kinds: Vec<&'static str> = POSITIVE_KINDS
        .iter()
        .chain(&NEGATIVE_KINDS)
        .copied()
        .filter(|k| only.is_empty() || only.split(',').any(|o| o == *k))
        .collect();
    let manifest = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&kind) = kinds.get(k) else { break };
                let n = if kind.starts_with("n-") { neg } else { per };
                for i in 0..n {
                    let s = draw_one(seed, kind, i);
                    std::fs::write(dir.join(&s.file), &s.bytes).expect("write image");
                    manifest.lock().unwrap().push(serde_json::json!({
                        "file": s.file, "payload": s.payload, "family": s.kind,
                    }));
                }
            });
        }
    });
    let mut manifest = manifest.into_inner().unwrap();
    manifest.sort_by_key(|m| m["file"].as_str().unwrap_or_default().to_string());
    let text = serde_json::to_string_pretty(&manifest).expect("manifest JSON");
    std::fs::write(dir.join("manifest.json"), text).expect("write manifest.json");
    std::fs::write(dir.join("seed.txt"), format!("{seed}\n")).expect("write seed.txt");
}
