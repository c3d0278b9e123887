//! Home-made hard families (issue 4): the shared corpus has no printed-receipt photos, no
//! monitor photos with moiré, few rotations and no thumbnails below ~2 px per module, on purpose.
//! This file renders its own slip QRs (distinct payloads, seeded, deterministic) and degrades
//! them in memory per family, then checks two things through the public `read_qr`:
//!
//! - never a wrong payload: any decoded text that parses as a bank slip is the expected one;
//! - a decode rate at or above a measured floor.
//!
//! `HARD_FAMILIES_OUT=<dir> cargo test -p reader --test it hard_families::write_images` writes the
//! same images plus a `manifest.json` (`[{file, payload, family}]`) so that
//! `../shared/tools/qr_anchor.py <dir>` (zxing-cpp) and `reader-bench <dir>` measure them too;
//! `scripts/bench-hard-families` does all three.

use std::f32::consts::PI;

use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{ImageFormat, Rgb, RgbImage};
use qrcode::{Color, EcLevel, QrCode};
use reader::{read_qr, Limits};

mod fresh;

/// Images per family. Families run as separate tests so the harness spreads them over cores.
const PER_FAMILY: usize = 12;

const FAMILIES: [&str; 8] = [
    "rotated", "dark", "tiny", "thermal", "moire", "thumb", "screen", "noqr",
];

// ---------------------------------------------------------------------------------------------
// Deterministic randomness: xorshift64*, seeded per (family, index).

struct Rng(u64);

impl Rng {
    fn new(family: &str, i: usize) -> Rng {
        // FNV-1a over the family name, mixed with the index: stable across platforms and runs.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in family.bytes().chain((i as u64).to_le_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng(h | 1)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn sign(&mut self) -> f32 {
        if self.next_u64() & 1 == 0 {
            -1.0
        } else {
            1.0
        }
    }

    /// Standard normal (Box–Muller).
    fn gauss(&mut self) -> f32 {
        let u1 = self.unit().max(1e-7);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos()
    }
}

// ---------------------------------------------------------------------------------------------
// A float RGB canvas (0..=255 per channel) and the few transforms the families need.

type Px = [f32; 3];

#[derive(Clone)]
struct Img {
    w: u32,
    h: u32,
    px: Vec<Px>,
}

impl Img {
    fn new(w: u32, h: u32, fill: Px) -> Img {
        Img {
            w,
            h,
            px: vec![fill; (w * h) as usize],
        }
    }

    fn at(&self, x: u32, y: u32) -> Px {
        self.px[(y * self.w + x) as usize]
    }

    fn set(&mut self, x: u32, y: u32, p: Px) {
        let i = (y * self.w + x) as usize;
        self.px[i] = p;
    }

    fn fill_rect(&mut self, x0: u32, y0: u32, w: u32, h: u32, p: Px) {
        for y in y0..(y0 + h).min(self.h) {
            for x in x0..(x0 + w).min(self.w) {
                self.set(x, y, p);
            }
        }
    }

    /// Bilinear sample at a continuous position (pixel centres at integer + 0.5); `None` outside.
    fn sample(&self, x: f32, y: f32) -> Option<Px> {
        let (fx, fy) = (x - 0.5, y - 0.5);
        if fx < -0.5 || fy < -0.5 || fx > self.w as f32 - 0.5 || fy > self.h as f32 - 0.5 {
            return None;
        }
        let (x0, y0) = (fx.floor(), fy.floor());
        let (tx, ty) = (fx - x0, fy - y0);
        let clamp = |v: f32, n: u32| (v.max(0.0) as u32).min(n - 1);
        let (xa, xb) = (clamp(x0, self.w), clamp(x0 + 1.0, self.w));
        let (ya, yb) = (clamp(y0, self.h), clamp(y0 + 1.0, self.h));
        let (a, b, c, d) = (
            self.at(xa, ya),
            self.at(xb, ya),
            self.at(xa, yb),
            self.at(xb, yb),
        );
        let mut out = [0.0; 3];
        for k in 0..3 {
            let top = a[k] + (b[k] - a[k]) * tx;
            let bot = c[k] + (d[k] - c[k]) * tx;
            out[k] = top + (bot - top) * ty;
        }
        Some(out)
    }

    /// Inverse-mapped warp: each output pixel centre goes through `map` to a source position,
    /// sampled bilinearly; positions outside the source take `bg(x, y)`.
    fn warp(
        &self,
        w: u32,
        h: u32,
        map: impl Fn(f32, f32) -> (f32, f32),
        bg: impl Fn(u32, u32) -> Px,
    ) -> Img {
        let mut out = Img::new(w, h, [0.0; 3]);
        for y in 0..h {
            for x in 0..w {
                let (sx, sy) = map(x as f32 + 0.5, y as f32 + 0.5);
                let p = self.sample(sx, sy).unwrap_or_else(|| bg(x, y));
                out.set(x, y, p);
            }
        }
        out
    }

    /// Separable box blur of radius `r` (a 3×3 box for r = 1).
    fn box_blur(&self, r: u32) -> Img {
        let r = r as i64;
        let pass = |src: &Img, horizontal: bool| {
            let mut out = src.clone();
            for y in 0..src.h as i64 {
                for x in 0..src.w as i64 {
                    let mut acc = [0.0f32; 3];
                    for d in -r..=r {
                        let (sx, sy) = if horizontal { (x + d, y) } else { (x, y + d) };
                        let sx = sx.clamp(0, src.w as i64 - 1) as u32;
                        let sy = sy.clamp(0, src.h as i64 - 1) as u32;
                        let p = src.at(sx, sy);
                        (0..3).for_each(|k| acc[k] += p[k]);
                    }
                    let n = (2 * r + 1) as f32;
                    out.set(x as u32, y as u32, acc.map(|v| v / n));
                }
            }
            out
        };
        pass(&pass(self, true), false)
    }

    fn map_px(&mut self, f: impl Fn(u32, u32, Px) -> Px) {
        for y in 0..self.h {
            for x in 0..self.w {
                let p = self.at(x, y);
                self.set(x, y, f(x, y, p));
            }
        }
    }

    fn add_noise(&mut self, rng: &mut Rng, sigma: f32) {
        for p in &mut self.px {
            let n = rng.gauss() * sigma;
            p.iter_mut().for_each(|v| *v += n);
        }
    }

    /// Sensor noise of a random sigma in `sigma` (lo, hi), then saved as a JPEG of quality
    /// `base` plus below `spread`: how each family ends.
    fn noisy_jpeg(
        &mut self,
        rng: &mut Rng,
        sigma: (f32, f32),
        (base, spread): (u8, usize),
    ) -> (Vec<u8>, &'static str) {
        let sigma = rng.range(sigma.0, sigma.1);
        self.add_noise(rng, sigma);
        jpeg(self, base + rng.below(spread) as u8)
    }

    fn to_rgb(&self) -> RgbImage {
        let mut out = RgbImage::new(self.w, self.h);
        for (o, p) in out.pixels_mut().zip(&self.px) {
            *o = Rgb(p.map(|v| v.round().clamp(0.0, 255.0) as u8));
        }
        out
    }

    fn from_rgb(img: &RgbImage) -> Img {
        Img {
            w: img.width(),
            h: img.height(),
            px: img.pixels().map(|p| p.0.map(f32::from)).collect(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The slip: same layout as the server's sandbox slip (`crates/server/src/slip_image.rs`),
// in module units so any module size can be drawn.

struct Palette {
    page: Px,
    header: Px,
    text: Px,
    /// QR background (quiet zone and light modules).
    light: Px,
    /// QR dark modules.
    dark: Px,
}

const HEADERS: [Px; 6] = [
    [30.0, 70.0, 160.0],
    [0.0, 150.0, 70.0],
    [0.0, 160.0, 220.0],
    [80.0, 40.0, 130.0],
    [250.0, 200.0, 0.0],
    [90.0, 90.0, 90.0],
];

fn light_palette(i: usize) -> Palette {
    Palette {
        page: [255.0; 3],
        header: HEADERS[i % HEADERS.len()],
        text: [200.0; 3],
        light: [255.0; 3],
        dark: [0.0; 3],
    }
}

/// The QR's module grid and the slip drawn with `u` pixels per module.
fn render_slip(payload: &str, u: u32, pal: &Palette) -> Img {
    let code = QrCode::with_error_correction_level(payload.as_bytes(), EcLevel::M)
        .expect("slip payload fits a QR");
    let w = code.width() as u32;
    let quiet = 4;
    let qr_px = (w + 2 * quiet) * u;
    let (width, height) = (qr_px + 20 * u, qr_px + 53 * u);
    let mut img = Img::new(width, height, pal.page);
    img.fill_rect(0, 0, width, 15 * u, pal.header);
    // Grey bars stand in for the slip's text rows.
    for row in 0..4u32 {
        let y0 = 20 * u + row * 5 * u;
        let x1 = width - 10 * u - row * 7 * u;
        img.fill_rect(10 * u, y0, x1 - 10 * u, (3 * u).div_ceil(2), pal.text);
    }
    let (ox, oy) = (10 * u, 42 * u + u / 2);
    img.fill_rect(ox, oy, qr_px, qr_px, pal.light);
    for (i, c) in code.to_colors().iter().enumerate() {
        if *c == Color::Dark {
            let (mx, my) = (i as u32 % w + quiet, i as u32 / w + quiet);
            img.fill_rect(ox + mx * u, oy + my * u, u, u, pal.dark);
        }
    }
    img
}

fn payload(rng: &mut Rng) -> String {
    const BANKS: [&str; 8] = ["002", "004", "006", "011", "014", "025", "030", "034"];
    const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const MIXED: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let bank = BANKS[rng.below(BANKS.len())];
    // The two reference shapes of the corpus: 22 upper-case, or 12 mixed-case characters.
    let (len, alphabet) = if rng.below(3) == 0 {
        (12, MIXED)
    } else {
        (22, UPPER)
    };
    let reference: String = (0..len)
        .map(|_| alphabet[rng.below(alphabet.len())] as char)
        .collect();
    slip_qr::encode_bank_slip(bank, &reference)
}

// ---------------------------------------------------------------------------------------------
// The families. Each returns encoded file bytes and the file extension.

fn png(img: &Img) -> (Vec<u8>, &'static str) {
    let mut out = std::io::Cursor::new(Vec::new());
    img.to_rgb()
        .write_to(&mut out, ImageFormat::Png)
        .expect("encode PNG");
    (out.into_inner(), "png")
}

fn jpeg(img: &Img, quality: u8) -> (Vec<u8>, &'static str) {
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, quality)
        .encode_image(&img.to_rgb())
        .expect("encode JPEG");
    (out, "jpg")
}

/// Linear brightness gradient across the image in a random direction: `lo` at one side, 1 at
/// the other.
fn lighting(rng: &mut Rng, w: u32, h: u32, lo: f32) -> impl Fn(u32, u32) -> f32 {
    let a = rng.range(0.0, 2.0 * PI);
    let (dx, dy) = (a.cos(), a.sin());
    let span = (w as f32 * dx.abs() + h as f32 * dy.abs()).max(1.0);
    let (cx, cy) = (w as f32 / 2.0, h as f32 / 2.0);
    move |x, y| {
        let t = ((x as f32 - cx) * dx + (y as f32 - cy) * dy) / span + 0.5;
        lo + (1.0 - lo) * t.clamp(0.0, 1.0)
    }
}

/// A table top behind the slip: a flat colour with a little low-frequency texture.
fn table_bg(rng: &mut Rng) -> impl Fn(u32, u32) -> Px {
    const TABLES: [Px; 4] = [
        [150.0, 110.0, 75.0],
        [90.0, 90.0, 95.0],
        [200.0, 195.0, 185.0],
        [60.0, 45.0, 35.0],
    ];
    let base = TABLES[rng.below(TABLES.len())];
    let texture = low_frequency_texture(rng, (0.01, 0.03), 0.06);
    move |x, y| {
        let t = texture(x, y);
        base.map(|v| v * t)
    }
}

/// A brightness factor around 1 (± 2 × `depth`) from two waves of random frequencies in
/// `freq` (lo, hi) cycles a pixel and a random phase: the texture of a background.
fn low_frequency_texture(rng: &mut Rng, freq: (f32, f32), depth: f32) -> impl Fn(u32, u32) -> f32 {
    let (f1, f2, ph) = (
        rng.range(freq.0, freq.1),
        rng.range(freq.0, freq.1),
        rng.range(0.0, 6.0),
    );
    move |x, y| 1.0 + depth * ((x as f32 * f1 + ph).sin() + (y as f32 * f2).cos())
}

/// Rotated by 5°–355° (the right angles and odd ones) with bilinear resampling, on a table.
fn rotated(i: usize, rng: &mut Rng, payload: &str) -> (Vec<u8>, &'static str) {
    const ANGLES: [f32; PER_FAMILY] = [
        90.0, 180.0, 270.0, 5.0, 13.0, 28.0, 45.0, 62.0, 117.0, 203.0, 318.0, 355.0,
    ];
    let u = 4 + rng.below(3) as u32;
    let slip = render_slip(payload, u, &light_palette(i));
    let a = ANGLES[i % ANGLES.len()].to_radians();
    let (c, s) = (a.cos(), a.sin());
    let diag = ((slip.w * slip.w + slip.h * slip.h) as f32).sqrt();
    let side = diag as u32 + 40;
    let (cx, cy) = (side as f32 / 2.0, side as f32 / 2.0);
    let (sx0, sy0) = (slip.w as f32 / 2.0, slip.h as f32 / 2.0);
    let bg = table_bg(rng);
    let out = slip.warp(
        side,
        side,
        |x, y| {
            let (dx, dy) = (x - cx, y - cy);
            (c * dx + s * dy + sx0, -s * dx + c * dy + sy0)
        },
        bg,
    );
    if i % 2 == 0 {
        png(&out)
    } else {
        jpeg(&out, 85 + rng.below(8) as u8)
    }
}

/// Dark mode: light modules on a dark card; a third each high, medium and low contrast.
fn dark(i: usize, rng: &mut Rng, payload: &str) -> (Vec<u8>, &'static str) {
    let bg = rng.range(15.0, 35.0);
    let (card, module) = match i % 3 {
        0 => (bg, rng.range(215.0, 240.0)),
        1 => (bg + 10.0, rng.range(150.0, 175.0)),
        _ => (bg + 15.0, rng.range(100.0, 120.0)),
    };
    let hdr = HEADERS[i % HEADERS.len()].map(|v| v * 0.35 + 10.0);
    let pal = Palette {
        page: [bg, bg, bg + 4.0],
        header: hdr,
        text: [90.0; 3],
        light: [card, card, card + 4.0],
        dark: [module; 3],
    };
    let img = render_slip(payload, 4 + rng.below(3) as u32, &pal);
    if i % 4 == 3 {
        jpeg(&img, 80)
    } else {
        png(&img)
    }
}

/// The whole slip as a thumbnail: 1.3–3 px per module, JPEG quality 60–80.
fn tiny(i: usize, rng: &mut Rng, payload: &str) -> (Vec<u8>, &'static str) {
    let u = 8;
    let slip = render_slip(payload, u, &light_palette(i)).to_rgb();
    let module_px = 1.3 + 1.7 * i as f32 / (PER_FAMILY - 1) as f32;
    let f = module_px / u as f32;
    let (w, h) = (
        (slip.width() as f32 * f).round() as u32,
        (slip.height() as f32 * f).round() as u32,
    );
    // Triangle widens its support when shrinking: an area-like, anti-aliased downscale.
    let small = image::imageops::resize(&slip, w, h, FilterType::Triangle);
    jpeg(&Img::from_rgb(&small), 60 + rng.below(21) as u8)
}

/// A phone photo of a thermal receipt: dots missing from the print (10–25 %), faded ink, a
/// dead head element or two, sheared and keystoned, uneven light, slight blur, noise, JPEG.
fn thermal(i: usize, rng: &mut Rng, payload: &str) -> (Vec<u8>, &'static str) {
    let paper = rng.range(215.0, 240.0);
    let paper_px = [paper, paper - 3.0, paper - 10.0];
    let ink = rng.range(60.0, 110.0);
    let ink_px = [ink, ink, ink + 5.0];
    let pal = Palette {
        page: paper_px,
        header: ink_px,
        text: ink_px,
        light: paper_px,
        dark: ink_px,
    };
    let u = 6;
    let mut print = render_slip(payload, u, &pal);
    // Printer dots are 2×2 px here (3 dots per module); each inked dot fails with probability p
    // and the ink of the others varies.
    let p = 0.10 + 0.15 * i as f32 / (PER_FAMILY - 1) as f32;
    for by in (0..print.h).step_by(2) {
        for bx in (0..print.w).step_by(2) {
            if print.at(bx, by)[0] > (paper + ink) / 2.0 {
                continue;
            }
            let dot = if rng.unit() < p {
                paper_px
            } else {
                let k = rng.range(0.85, 1.15);
                ink_px.map(|v| (v * k).min(paper))
            };
            print.fill_rect(bx, by, 2, 2, dot);
        }
    }
    // Dead head elements: a light line down the whole receipt.
    for _ in 0..1 + rng.below(2) {
        let x = rng.below(print.w as usize) as u32;
        for y in 0..print.h {
            print.set(x, y, paper_px);
        }
    }
    // The photo: 1.0–1.3 px per print px, shear both ways, keystone, a small tilt.
    let scale = rng.range(1.0, 1.3);
    let (shx, shy) = (
        rng.sign() * rng.range(0.03, 0.10),
        rng.sign() * rng.range(0.03, 0.08),
    );
    let keystone = rng.sign() * rng.range(0.05, 0.15);
    let tilt = rng.range(-4.0f32, 4.0).to_radians();
    let (c, s) = (tilt.cos(), tilt.sin());
    let (w, h) = (
        (print.w as f32 * scale * 1.35) as u32,
        (print.h as f32 * scale * 1.25) as u32,
    );
    let (cx, cy) = (w as f32 / 2.0, h as f32 / 2.0);
    let (pw, ph) = (print.w as f32, print.h as f32);
    let out_h = h as f32;
    let bg = table_bg(rng);
    let mut photo = print.warp(
        w,
        h,
        |x, y| {
            let (dx, dy) = ((x - cx) / scale, (y - cy) / scale);
            let (rx, ry) = (c * dx + s * dy, -s * dx + c * dy);
            // The far edge looks narrower: horizontal scale changes along y.
            let k = 1.0 + keystone * (y - cy) / out_h;
            let (kx, ky) = (rx / k, ry);
            (kx + shx * ky + pw / 2.0, ky + shy * kx + ph / 2.0)
        },
        bg,
    );
    let lo = rng.range(0.55, 0.8);
    let light = lighting(rng, w, h, lo);
    photo.map_px(|x, y, p| p.map(|v| v * light(x, y)));
    let mut photo = photo.box_blur(1);
    photo.noisy_jpeg(rng, (2.0, 6.0), (70, 16))
}

/// A phone photo of a monitor: the screen's RGB sub-pixel stripes sampled by the camera at a
/// slight angle and scale (aliasing), a sinusoidal interference pattern on top, glow, slight
/// blur, noise, JPEG.
fn moire(i: usize, rng: &mut Rng, payload: &str) -> (Vec<u8>, &'static str) {
    screen_photo(i, rng, payload, false)
}

/// A phone photo of a monitor taken at an angle: the moiré family's screen plus a perspective
/// (the near edge 10–30 % larger than the far one, both axes), a tilt of up to ±8° and 2–4
/// screen px per module, so the sub-pixel stripes alias harder.
fn screen(i: usize, rng: &mut Rng, payload: &str) -> (Vec<u8>, &'static str) {
    screen_photo(i, rng, payload, true)
}

fn screen_photo(i: usize, rng: &mut Rng, payload: &str, persp: bool) -> (Vec<u8>, &'static str) {
    let u = if persp {
        3 + rng.below(3) as u32
    } else {
        4 + rng.below(3) as u32
    };
    let mut pal = light_palette(i);
    pal.page = [235.0; 3];
    pal.light = [235.0; 3];
    pal.dark = [35.0, 35.0, 40.0];
    let screen = render_slip(payload, u, &pal);
    let scale = rng.range(1.1, 1.6); // camera px per screen px
    let max_tilt = if persp { 8.0 } else { 3.0 };
    let tilt = rng.range(-max_tilt, max_tilt).to_radians();
    let (c, s) = (tilt.cos(), tilt.sin());
    let stripe = rng.range(0.25, 0.45);
    // Perspective: 1/(1 + px·x + py·y) over the frame, so one side looks 10–30 % larger.
    let (ppx, ppy, margin) = if persp {
        (
            rng.sign() * rng.range(0.1, 0.3),
            rng.sign() * rng.range(0.05, 0.2),
            1.4,
        )
    } else {
        (0.0, 0.0, 1.1)
    };
    let (w, h) = (
        (screen.w as f32 * scale * margin) as u32,
        (screen.h as f32 * scale * margin) as u32,
    );
    let (cx, cy) = (w as f32 / 2.0, h as f32 / 2.0);
    let (sw, sh) = (screen.w as f32 / 2.0, screen.h as f32 / 2.0);
    let (fw, fh) = (w as f32, h as f32);
    let to_screen = |x: f32, y: f32| {
        let den = 1.0 + ppx * (x - cx) / fw + ppy * (y - cy) / fh;
        let (dx, dy) = ((x - cx) / scale / den, (y - cy) / scale / den);
        (c * dx + s * dy + sw, -s * dx + c * dy + sh)
    };
    let bezel = [20.0, 20.0, 22.0];
    // Each camera pixel integrates 2×2 samples of the sub-pixel screen: too few to resolve the
    // stripes, so they alias into coloured bands.
    let mut photo = Img::new(w, h, bezel);
    for y in 0..h {
        for x in 0..w {
            let mut acc = [0.0f32; 3];
            let mut n = 0.0;
            for (ox, oy) in [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)] {
                let (sx, sy) = to_screen(x as f32 + ox, y as f32 + oy);
                let Some(p) = screen.sample(sx, sy) else {
                    continue;
                };
                let sub = ((sx.rem_euclid(1.0)) * 3.0) as usize;
                for (k, a) in acc.iter_mut().enumerate() {
                    let gain = if k == sub.min(2) {
                        1.0 + 2.0 * stripe
                    } else {
                        1.0 - stripe
                    };
                    *a += p[k] * gain;
                }
                n += 1.0;
            }
            if n > 0.0 {
                photo.set(x, y, acc.map(|v| v / n));
            }
        }
    }
    // Interference: two gratings at close frequencies and angles beat into broad moiré bands.
    let (p1, a1) = (rng.range(4.0, 9.0), rng.range(0.0, PI));
    let (p2, a2) = (p1 * rng.range(1.05, 1.2), a1 + rng.range(0.05, 0.3));
    let amp = rng.range(0.15, 0.45);
    let lo = rng.range(0.7, 0.9);
    let light = lighting(rng, w, h, lo);
    photo.map_px(|x, y, p| {
        let (xf, yf) = (x as f32, y as f32);
        let g1 = (2.0 * PI * (xf * a1.cos() + yf * a1.sin()) / p1).sin();
        let g2 = (2.0 * PI * (xf * a2.cos() + yf * a2.sin()) / p2).sin();
        let m = (1.0 + amp * 0.5 * (g1 + g2)) * light(x, y);
        p.map(|v| v * m)
    });
    let mut photo = photo.box_blur(1);
    photo.noisy_jpeg(rng, (2.0, 5.0), (70, 16))
}

/// A real slip's layout (portrait page, bank header, logo, text rows, amount, the QR in a lower
/// corner taking a fifth to a quarter of the width) drawn at 6 px per module, then sent through
/// a chat app: shrunk to a 260–360 px wide thumbnail at 1.2–2.2 px per module (Lanczos or
/// Triangle filter, as apps differ), sometimes JPEG-compressed before the shrink too, and saved
/// as JPEG q35–65.
fn thumb(i: usize, rng: &mut Rng, payload: &str) -> (Vec<u8>, &'static str) {
    let code = QrCode::with_error_correction_level(payload.as_bytes(), EcLevel::M)
        .expect("slip payload fits a QR");
    let n = code.width() as u32;
    let u = 6u32;
    let module_px = 1.2 + 1.0 * i as f32 / (PER_FAMILY - 1) as f32;
    let target_w = 260 + rng.below(101) as u32;
    // Page width at 6 px/module so that it shrinks to `target_w` at `module_px`.
    let page_w = (target_w as f32 * u as f32 / module_px) as u32;
    let page_h = (page_w as f32 * rng.range(1.1, 1.7)) as u32;
    let qr_px = (n + 4) * u;
    assert!(qr_px + 2 * u < page_w, "QR fits the page");
    let header = HEADERS[i % HEADERS.len()];
    let mut page = Img::new(page_w, page_h, [250.0, 250.0, 252.0]);
    page.fill_rect(0, 0, page_w, page_h / 9, header);
    // Logo: a light square in the header.
    let logo = page_h / 14;
    page.fill_rect(page_w / 20, page_h / 72, logo, logo, [255.0; 3]);
    // Text rows (two columns), the amount row larger and darker.
    let row_h = (page_h / 60).max(4);
    let mut y = page_h / 9 + 3 * row_h;
    let qr_top = page_h - qr_px - 3 * u;
    let mut k = 0;
    while y + row_h < qr_top - 2 * row_h {
        let (h, shade) = if k == 2 {
            (row_h * 2, 40.0)
        } else {
            (row_h, 110.0 + rng.range(0.0, 60.0))
        };
        let lw = (page_w as f32 * rng.range(0.15, 0.35)) as u32;
        let rw = (page_w as f32 * rng.range(0.2, 0.4)) as u32;
        page.fill_rect(page_w / 16, y, lw, h, [shade; 3]);
        page.fill_rect(page_w - page_w / 16 - rw, y, rw, h, [shade; 3]);
        y += h + row_h * 2;
        k += 1;
    }
    // The QR in the lower right or lower left corner, its own quiet zone of 2 modules.
    let ox = if i % 2 == 0 {
        page_w - qr_px - 2 * u
    } else {
        2 * u
    };
    page.fill_rect(ox, qr_top, qr_px, qr_px, [255.0; 3]);
    for (j, c) in code.to_colors().iter().enumerate() {
        if *c == Color::Dark {
            let (mx, my) = (j as u32 % n + 2, j as u32 / n + 2);
            page.fill_rect(ox + mx * u, qr_top + my * u, u, u, [20.0; 3]);
        }
    }
    let mut rgb = page.to_rgb();
    if i % 3 == 1 {
        // Saved once by the bank app before the chat app shrinks it.
        let (bytes, _) = jpeg(&page, 85);
        rgb = image::load_from_memory(&bytes).expect("own JPEG").to_rgb8();
    }
    let filter = if i % 2 == 0 {
        FilterType::Lanczos3
    } else {
        FilterType::Triangle
    };
    let th = (page_h as f32 * target_w as f32 / page_w as f32).round() as u32;
    let small = image::imageops::resize(&rgb, target_w, th, filter);
    jpeg(&Img::from_rgb(&small), 35 + rng.below(31) as u8)
}

/// Images without any QR code, for the cost of failing: slip-like pages (text rows, a grey
/// block and a grid of squares where the QR would be) at thumbnail, screenshot and phone-photo
/// sizes (up to 2400×3200), noise, JPEG.
fn noqr(i: usize, rng: &mut Rng, _payload: &str) -> (Vec<u8>, &'static str) {
    let (w, h) = match i % 3 {
        0 => (300 + rng.below(100) as u32, 420 + rng.below(100) as u32),
        1 => (1080 + rng.below(200) as u32, 1600 + rng.below(400) as u32),
        _ => (2000 + rng.below(400) as u32, 2800 + rng.below(400) as u32),
    };
    let mut page = Img::new(w, h, [245.0, 245.0, 240.0]);
    page.fill_rect(0, 0, w, h / 9, HEADERS[i % HEADERS.len()]);
    let row = (h / 50).max(3);
    for r in 0..12 {
        let y = h / 8 + r * row * 3;
        let len = (w as f32 * rng.range(0.3, 0.8)) as u32;
        page.fill_rect(w / 14, y, len, row, [100.0 + rng.range(0.0, 80.0); 3]);
    }
    // Where the QR would be: a checker of random squares (QR-like texture, no finder patterns).
    let cell = (w / 60).max(2);
    let (ox, oy) = (w / 2, h * 2 / 3);
    for cy in 0..20 {
        for cx in 0..20 {
            if rng.below(2) == 0 {
                page.fill_rect(ox + cx * cell, oy + cy * cell, cell, cell, [20.0; 3]);
            }
        }
    }
    page.noisy_jpeg(rng, (2.0, 8.0), (70, 20))
}

struct Sample {
    file: String,
    payload: String,
    bytes: Vec<u8>,
}

fn generate(family: &str) -> Vec<Sample> {
    (0..PER_FAMILY)
        .map(|i| {
            let mut rng = Rng::new(family, i);
            let payload = payload(&mut rng);
            assert!(slip_qr::parse_bank_slip(&payload).is_ok(), "{payload}");
            let (bytes, ext) = match family {
                "rotated" => rotated(i, &mut rng, &payload),
                "dark" => dark(i, &mut rng, &payload),
                "tiny" => tiny(i, &mut rng, &payload),
                "thermal" => thermal(i, &mut rng, &payload),
                "moire" => moire(i, &mut rng, &payload),
                "thumb" => thumb(i, &mut rng, &payload),
                "screen" => screen(i, &mut rng, &payload),
                "noqr" => noqr(i, &mut rng, &payload),
                _ => unreachable!("unknown family {family}"),
            };
            Sample {
                file: format!("{family}-{i:02}.{ext}"),
                payload,
                bytes,
            }
        })
        .collect()
}

/// Reads `bytes` under `limits`, panicking on a slip payload other than `payload` (`what`
/// names the image); whether `payload` was read.
fn reads_payload(bytes: &[u8], payload: &str, limits: &Limits, what: &str) -> bool {
    let texts = read_qr(bytes, limits).unwrap_or_default();
    for t in &texts {
        assert!(
            slip_qr::parse_bank_slip(t).is_err() || t == payload,
            "{what}: decoded to the wrong slip {t:?} (expected {payload:?})"
        );
    }
    texts.iter().any(|t| t == payload)
}

/// Decode every image of `family`. Panics on a wrong payload; returns (decoded, failed files).
fn score(family: &str) -> (usize, Vec<String>) {
    let samples = generate(family);
    let distinct: std::collections::HashSet<_> = samples.iter().map(|s| &s.payload).collect();
    assert_eq!(distinct.len(), samples.len(), "{family}: payloads repeat");
    // The default pass budget, but no time limit: counts must not depend on the machine's load
    // (the time budget is the benchmarks' business, `scripts/bench-hard-families`).
    let limits = Limits {
        scan_time: std::time::Duration::from_secs(3600),
        ..Limits::default()
    };
    let (mut ok, mut failed) = (0, Vec::new());
    for s in &samples {
        let what = format!("{family}: {}", s.file);
        if reads_payload(&s.bytes, &s.payload, &limits, &what) {
            ok += 1;
        } else {
            failed.push(s.file.clone());
        }
    }
    println!("{family}: {ok}/{}, failed {failed:?}", samples.len());
    (ok, failed)
}

fn at_least(family: &str, floor: usize) {
    let (ok, failed) = score(family);
    assert!(
        ok >= floor,
        "{family}: {ok}/{PER_FAMILY} < floor {floor}, failed {failed:?}"
    );
}

// Floors: the counts measured on 2026-11-22 (this generator, N = 12 per family) minus one, so
// a decoder upgrade may lose one image per family but not more. Measured, ours / zxing-cpp on
// the same files (`scripts/bench-hard-families`):
//   rotated 12 / 12, dark 12 / 12, tiny 12 / 12, thermal 12 / 2 (3 before the `close`
//   strategy), moire 12 / 9.
// Added 2026-11-23 (issue 20), ours / zxing-cpp / WeChat: thumb 12 / 9 / 12 (11 before the
// Lanczos upscale), screen 12 / 12 / 12.

#[test]
fn rotated_floor() {
    at_least("rotated", 11);
}

#[test]
fn dark_floor() {
    at_least("dark", 11);
}

#[test]
fn tiny_floor() {
    at_least("tiny", 11);
}

#[test]
fn thermal_floor() {
    at_least("thermal", 11);
}

#[test]
fn moire_floor() {
    at_least("moire", 11);
}

#[test]
fn thumb_floor() {
    at_least("thumb", 11);
}

#[test]
fn screen_floor() {
    at_least("screen", 11);
}

/// No QR at all: nothing may come out, whatever the size.
/// The evidence gate (finder patterns placed like a QR's) passes on every image with a QR, so it
/// never costs a read, and fails on every `noqr` image, which then stops after the free passes.
#[test]
fn evidence_gate_passes_every_positive_and_no_noqr() {
    for family in FAMILIES {
        for s in generate(family) {
            let gray = reader::decode_gray(&s.bytes, &Limits::default()).unwrap();
            let e = reader::finder_evidence(&gray);
            assert_eq!(e.qr_like, family != "noqr", "{}: {e:?}", s.file);
        }
    }
}

/// A thermal print whose 2×2 average shows a false, light-centred triple (speckle in a dim
/// photo) while the code's own finders only show at full scale: when the coarse triple's region
/// does not read, the full-scale gate decides the region and the polarity, and the print reads
/// (with the coarse evidence final it read nothing at all).
#[test]
fn a_misleading_coarse_triple_gives_way_to_the_full_scale_gate() {
    let s = generate("thermal")
        .into_iter()
        .find(|s| s.file.starts_with("thermal-05."))
        .expect("thermal-05");
    let gray = reader::decode_gray(&s.bytes, &Limits::default()).unwrap();
    let e = reader::finder_evidence(&gray);
    assert!(e.coarse && e.light, "{e:?}");
    let limits = Limits {
        scan_time: std::time::Duration::from_secs(3600),
        ..Limits::default()
    };
    let texts = read_qr(&s.bytes, &limits).unwrap_or_default();
    assert_eq!(texts, vec![s.payload.clone()]);
}

#[test]
fn noqr_reads_nothing() {
    let (ok, failed) = score("noqr");
    assert_eq!((ok, failed.len()), (0, PER_FAMILY));
}

/// Writes every family's images and a corpus-style `manifest.json` to `$HARD_FAMILIES_OUT`
/// (does nothing when it is unset).
#[test]
fn write_images() {
    let Some(dir) = std::env::var_os("HARD_FAMILIES_OUT") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).expect("create HARD_FAMILIES_OUT");
    let mut manifest = Vec::new();
    for family in FAMILIES {
        for s in generate(family) {
            std::fs::write(dir.join(&s.file), &s.bytes).expect("write image");
            manifest.push(serde_json::json!({
                "file": s.file, "payload": s.payload, "family": family,
            }));
        }
    }
    let text = serde_json::to_string_pretty(&manifest).expect("manifest JSON");
    std::fs::write(dir.join("manifest.json"), text).expect("write manifest.json");
}
