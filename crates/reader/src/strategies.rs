//! Preprocessing strategies, tried in order until one yields a QR code.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::time::{Duration, Instant};

#[cfg(test)]
use image::imageops::FilterType;
use image::GrayImage;
use rxing::{BarcodeFormat, DecodeHints};

use crate::Limits;

/// Longest side we feed to the detectors first: only phone photos (up to 3000×4600) shrink.
const WORK_SIDE: u32 = 2400;
/// Images whose short side is below this get upscaled tries (thumbnails).
const SMALL_SIDE: u32 = 1000;
/// Chat-app thumbnails (a whole slip in ~300 px, ~2 px per module) get a Lanczos upscale.
const TINY_SIDE: u32 = 600;
/// Largest image scanned at full resolution as the last resort (phone photos are ~14 Mpx).
const FULL_RES_MAX_PIXELS: u64 = 16_000_000;
/// Short side from which the evidence gate's working-scale scan counts only finders of 2 px
/// modules and more (smaller ones show on the 2×2 average; 1 px "patterns" are mostly noise).
const CHEAP_HALF_MIN_SIDE: u32 = 700;
/// Short side from which the evidence gate looks at the 2×2 average first (the half pass made
/// it), and at full scale only when no finders show there.
const HALF_GATE_MIN_SIDE: u32 = HALF_FIRST_MIN_SIDE;
/// Short side from which the first pass scans a 2×2-averaged copy (thumbnails, whose modules
/// are 1–2 px, skip it: the average would blur them away). Measured: lowered from 700 to 450,
/// the half pass reads 20 of the hard families' 466–679 px screen, moiré and rotated photos at
/// a quarter of a plain pass, and 9 more corpus slips; no count changes.
const HALF_FIRST_MIN_SIDE: u32 = 450;
/// Short side under which the evidence gate also looks at a Lanczos ×2 of the image (was
/// `TINY_SIDE`, 600): thumbnails up to ~560 px with 1–2 px modules; the 490–590 px receipt
/// photos of the thermal family have 6–8 px modules and paid ~5 ms for it.
const GATE_UPSCALE_MAX_SIDE: u32 = 570;
/// Passes that run whatever the time (see `Budget`).
const FREE_PASSES: u32 = 2;
/// Most passes over QR regions per read: every region strategy on eight regions (of the gate's
/// triples on the 2×2 average, the working scale and a blurred copy: the chosen ones, and
/// others with timing patterns). The false triples of text give regions of a few hundredths
/// of the image (a fraction of a ms a pass); `REGION_AREAS` bounds the big ones.
const REGION_PASSES: u32 = 20 * CROP_STRATEGIES.len() as u32;
/// Most pixels the region passes of one read scan together, in working images: most regions
/// are a few percent of the image (the false triples of text, a few hundredths), so the count
/// above bounds them; this bounds the big ones (a false triple spanning a photo).
const REGION_AREAS: u64 = 6;
/// Largest image the fallback decoder rqrr is tried on.
const RQRR_MAX_PIXELS: u64 = 800_000;
/// Mean luminance below which the image is taken for dark mode and tried inverted first.
const DARK_MEAN: u64 = 100;

type Prep = fn(&GrayImage) -> Option<GrayImage>;
/// A preparation for an rqrr pass from the working image (inverted in dark mode).
type RqrrPrep = fn(&GrayImage) -> GrayImage;

/// One preprocessing strategy (its name is reported to benchmarks) and its preparation.
struct Strategy {
    name: &'static str,
    prep: Prep,
}

/// The strategies after the plain image, ordered by measured yield per unit of cost on the
/// shared corpus and the hard families (`docs/benchmarks.md`, "Reader, round two"). Each maps
/// the working image (already downscaled to at most `WORK_SIDE`) to a new image to scan, or
/// `None` when it does not apply.
const STRATEGIES: &[Strategy] = &[
    // Thermal receipts: dots the printer missed speckle the modules with light holes that
    // break finder-pattern runs; a closing of the dark parts fills holes up to 4 px wide.
    Strategy {
        name: "close",
        prep: |g| Some(close_dark(g, 2)),
    },
    // Thumbnails: 1-2 px modules are too thin for finder-pattern scanning. A Lanczos-3 upscale
    // (×3 below 400 px, ×2 up to TINY_SIDE) restores module edges before the decoder
    // binarises; cheap on small images.
    Strategy {
        name: "lanczos",
        prep: |g| {
            let short = g.width().min(g.height());
            (short < TINY_SIDE).then(|| upscale_lanczos(g, lanczos_factor(short)))
        },
    },
    // Noisy / moiré photos: averaging 2×2 blocks low-passes the noise and screen pattern.
    Strategy {
        name: "half",
        prep: |g| (g.width().min(g.height()) > 800).then(|| box_downscale(g, 2)),
    },
    // Small photographed screens, too small to halve: a 3×3 box blur suppresses the sub-pixel
    // stripes and moiré bands that break the finder-pattern runs.
    Strategy {
        name: "smooth",
        prep: |g| (g.width().min(g.height()) <= 800).then(|| box_blur3(g)),
    },
    // Thumbnails between TINY_SIDE and SMALL_SIDE: a smooth ×2.
    Strategy {
        name: "bilinear2",
        prep: |g| {
            let short = g.width().min(g.height());
            (TINY_SIDE..SMALL_SIDE)
                .contains(&short)
                .then(|| upscale_bilinear2(g))
        },
    },
    // A light-on-dark QR on a page too light to count as dark mode (dark-mode images are
    // inverted first anyway, so this rarely pays: late).
    Strategy {
        name: "inverted",
        prep: |g| Some(invert(g)),
    },
    // Uneven light: binarize against a large-window local mean instead of the decoders' own.
    Strategy {
        name: "local-mean",
        prep: |g| Some(local_mean_threshold(g, 0)),
    },
    // Noise / blur: one global Otsu threshold does not fragment modules like local ones can.
    Strategy {
        name: "otsu",
        prep: |g| Some(otsu_threshold(g)),
    },
];

/// rqrr's passes after every rxing one: the plain image (in the decoders' polarity). (Its
/// pass on the closing, "close+rqrr", runs right after rxing's on the same closed image.)
const RQRR_TAIL: &[(&str, RqrrPrep)] = &[("rqrr", |g| g.clone())];

/// A preparation of the QR region (see [`Region`]), or `None` when it does not apply;
/// borrowed when the region keeps it for a later strategy.
type CropPrep = for<'r> fn(&'r Region<'_>) -> Option<Cow<'r, GrayImage>>;

/// One QR region and the preparations several region strategies share, each made once: the
/// closing (`crop+close` and its rqrr pass), the blur + Lanczos ×2 (`crop+soft`, and under
/// the threshold of `crop+sharp` and its rqrr pass). The same images bit for bit as made
/// apart, so no read changes; a failing region paid for them two and three times.
struct Region<'a> {
    /// The crop of the working image, in the decoders' polarity.
    c: &'a GrayImage,
    /// Its module size in px.
    m: f32,
    /// Whether the image is low-contrast.
    low: bool,
    closed: OnceCell<GrayImage>,
    soft: OnceCell<GrayImage>,
    sharp: OnceCell<GrayImage>,
}

impl<'a> Region<'a> {
    fn new(c: &'a GrayImage, m: f32, low: bool) -> Region<'a> {
        Region {
            c,
            m,
            low,
            closed: OnceCell::new(),
            soft: OnceCell::new(),
            sharp: OnceCell::new(),
        }
    }

    fn closed(&self) -> Cow<'_, GrayImage> {
        Cow::Borrowed(self.closed.get_or_init(|| close_dark(self.c, 2)))
    }

    fn soft(&self) -> &GrayImage {
        self.soft
            .get_or_init(|| upscale_lanczos(&box_blur3(self.c), 2))
    }

    /// [`sharpen_region`] of the crop's shared blur + upscale.
    fn sharp(&self) -> Cow<'_, GrayImage> {
        Cow::Borrowed(
            self.sharp
                .get_or_init(|| sharpen_region(self.soft(), self.m)),
        )
    }
}

/// The strategies tried on the QR region the evidence gate found, before the whole image: the
/// ones that read late on the hard families (`docs/benchmarks.md`), each on a crop of a few
/// percent to half of the image. rqrr costs 5–10× an rxing pass per pixel, so it only runs
/// on the crop (and the small images' tail).
const CROP_STRATEGIES: &[(&str, CropPrep)] = &[
    // (The crop as it is, and rqrr on it, read nothing the list below does not: left out.)
    // Dim dark-mode cards and faded prints: one global threshold over the code alone.
    ("crop+otsu", |r| {
        r.low.then(|| Cow::Owned(otsu_threshold(r.c)))
    }),
    // Thermal receipts: missing printer dots (see "close").
    ("crop+close", |r| (r.m >= 2.5).then(|| r.closed())),
    // Thumbnails: modules under 3.5 px upscaled to 4–7 px with Lanczos (see "lanczos").
    ("crop+lanczos", |r| {
        (r.m < 3.5).then(|| Cow::Owned(upscale_lanczos(r.c, crop_lanczos_factor(r.m))))
    }),
    ("crop+close+rqrr", |r| (r.m >= 2.5).then(|| r.closed())),
    // Speckled or faded thermal prints and moiré screens at 3–6 px per module (issue 29,
    // what zxing-cpp and WeChat read and the above did not): see `sharpen_region`.
    ("crop+sharp", |r| {
        sharp_fits(r.c, r.m, SHARP_MAX_PIXELS).then(|| r.sharp())
    }),
    // Moiré screens: the same smoothing and upscale, the decoder's own binariser after it.
    ("crop+soft", |r| {
        sharp_fits(r.c, r.m, SHARP_MAX_PIXELS).then(|| Cow::Borrowed(r.soft()))
    }),
    ("crop+sharp+rqrr", |r| {
        sharp_fits(r.c, r.m, SHARP_RQRR_MAX_PIXELS).then(|| r.sharp())
    }),
    // Uneven or faded ink: a threshold against the mean of ±8 modules (the decoders' own
    // binariser works in 8 px blocks, a module or two here).
    ("crop+mean", |r| {
        Some(Cow::Owned(mean_binarize_radius(
            r.c,
            (8.0 * r.m) as usize,
            1,
            1,
        )))
    }),
    // The global threshold of the first entry, for codes that are not low-contrast overall.
    ("crop+otsu", |r| {
        (!r.low).then(|| Cow::Owned(otsu_threshold(r.c)))
    }),
];

/// Every region strategy (and the wide region's, `WIDE_STRATEGIES`) on `crop` taken as a QR
/// region of `module` px modules, each scanned as in a read; the texts found (for the image
/// fuzz target: in a read the region strategies run only behind the gate's finders, which
/// fuzzed bytes rarely show).
pub(crate) fn every_region_strategy(crop: &GrayImage, module: f32, low: bool) -> Vec<String> {
    let mut out = Vec::new();
    let region = Region::new(crop, module, low);
    for (name, prep) in CROP_STRATEGIES {
        if let Some(img) = prep(&region) {
            out.extend(if name.ends_with("rqrr") {
                scan_rqrr(&img)
            } else {
                scan_rxing(&img, true)
            });
        }
    }
    for (_, prep) in WIDE_STRATEGIES {
        out.extend(scan_rxing(&prep(crop, module), true));
    }
    out
}

/// Largest module (px) of a QR region `sharpen_region` upscales.
const SHARP_MAX_MODULE: f32 = 6.5;
/// Largest QR region (px) `sharpen_region` upscales for rxing, and for rqrr (5–10× rxing's
/// cost per pixel): a slip's code with its 10-module margins at 6.5 px per module, tilted, is
/// ~0.15 Mpx; what is bigger is a false triple's region (text, a photo), where the ×4 upscale
/// was most of a failing read.
const SHARP_MAX_PIXELS: u64 = 300_000;
const SHARP_RQRR_MAX_PIXELS: u64 = 160_000;

/// Most modules² a QR region `sharpen_region` upscales spans: a slip's code (up to version 6,
/// 41 modules) with its 10-module margins, tilted (61² × 1.5). A bigger region is a false
/// triple's (text, a photo): its ×4 upscale was most of a failing read.
const SHARP_MAX_MODULES2: f32 = 5600.0;

/// Whether the QR region of a triple (corner first) spans at most `SHARP_MAX_MODULES2`
/// modules² (its two sides plus the 10-module margins each side, the parallelogram's
/// bounding box approximated by the sides' sum along each axis).
fn slip_sized(f: &Triple) -> bool {
    region_modules2(f) <= SHARP_MAX_MODULES2
}

/// The modules² of a triple's QR region as [`slip_sized`] measures it (infinite when the
/// module size is not positive).
fn region_modules2(f: &Triple) -> f32 {
    let [a, b, c] = *f;
    let m = (a.2 + b.2 + c.2) / 3.0;
    let w = (b.0 - a.0).abs() + (c.0 - a.0).abs() + 20.0 * m;
    let h = (b.1 - a.1).abs() + (c.1 - a.1).abs() + 20.0 * m;
    if m > 0.0 {
        w * h / (m * m)
    } else {
        f32::INFINITY
    }
}

/// Most modules² the QR region of a triple other than the chosen one may span for the default
/// scan to try it: twice a slip's code's (`SHARP_MAX_MODULES2`), slack for a module size
/// under-estimated by ~30 % on top of the tilt. What is bigger is a false triple's (a photo's
/// texture, text). The chosen triple's big region stays: on a photographed screen, moiré
/// "finders" of 2 px spanning 200 modules gave a region holding the real code, which its ×2
/// upscale read (seed 555002, `f-screen-0026`); skipping every big region saved a third of
/// the photos' time, this a tenth. The exhaustive scan tries them all.
const REGION_MAX_MODULES2: f32 = 2.0 * SHARP_MAX_MODULES2;

/// Whether `sharpen_region` (or `crop+soft`) applies to a region `c` of `m` px modules, at
/// most `max_pixels`.
fn sharp_fits(c: &GrayImage, m: f32, max_pixels: u64) -> bool {
    m < SHARP_MAX_MODULE && area(c) <= max_pixels && area(c) as f32 <= SHARP_MAX_MODULES2 * m * m
}

fn area(g: &GrayImage) -> u64 {
    u64::from(g.width()) * u64::from(g.height())
}

/// A QR region of `module` px modules, smoothed, upscaled and binarised: a 3×3 box blur
/// merges a thermal print's missing dots and a screen's moiré into the modules, a Lanczos ×2
/// restores the edges the blur softened (a sharper kernel than the decoders' sampling), and a
/// threshold against the mean of ±8 modules around each pixel decides dark and light (a faded
/// band or glare shifts the level across the code). What WeChat's reader does with its
/// super-resolution model, in a few ms on a crop of a few percent of the image. (This is the
/// threshold, on `up`, the crop blurred and upscaled: [`Region::soft`].)
fn sharpen_region(up: &GrayImage, module: f32) -> GrayImage {
    mean_binarize_radius(up, (16.0 * module).clamp(8.0, 120.0) as usize, 1, 1)
}

/// The Lanczos factor for a QR region of `module` px modules: ×3 under 2 px, else ×2.
fn crop_lanczos_factor(module: f32) -> u32 {
    if module < 2.0 {
        3
    } else {
        2
    }
}

/// The Lanczos factor for a whole thumbnail of short side `short`: ×3 under 400 px, else ×2.
fn lanczos_factor(short: u32) -> u32 {
    if short < 400 {
        3
    } else {
        2
    }
}

/// How many times the working image's pixels the strategy `name` hands the decoder (its
/// upscale), so the budget can refuse a pass before paying for its preparation.
fn prepared_scale(name: &str, work: &GrayImage) -> u64 {
    let short = work.width().min(work.height());
    match name {
        "lanczos" if short < TINY_SIDE => u64::from(lanczos_factor(short)).pow(2),
        "bilinear2" => 4,
        _ => 1,
    }
}

/// The region of `g` holding the QR whose finders (x, y, module; corner first) the gate
/// found: the parallelogram they span, completed by its fourth corner, plus 10 modules each
/// side (3.5 to the code's edge, the quiet zone, and slack for perspective); `None` when
/// that is more than half the image (no saving) or degenerate. Also returns the module size.
fn qr_region(g: &GrayImage, f: &[(f32, f32, f32); 3]) -> Option<(GrayImage, f32)> {
    qr_region_padded(g, f, 10.0)
}

/// [`qr_region`] with `pad_modules` modules each side instead of 10.
fn qr_region_padded(g: &GrayImage, f: &Triple, pad_modules: f32) -> Option<(GrayImage, f32)> {
    let [a, b, c] = *f;
    let m = (a.2 + b.2 + c.2) / 3.0;
    let d = (b.0 + c.0 - a.0, b.1 + c.1 - a.1);
    let xs = [a.0, b.0, c.0, d.0];
    let ys = [a.1, b.1, c.1, d.1];
    let pad = pad_modules * m;
    let lo = |v: &[f32; 4]| v.iter().copied().fold(f32::MAX, f32::min) - pad;
    let hi = |v: &[f32; 4]| v.iter().copied().fold(f32::MIN, f32::max) + pad;
    let (w, h) = (g.width() as f32, g.height() as f32);
    let (x0, y0) = (lo(&xs).max(0.0), lo(&ys).max(0.0));
    let (x1, y1) = (hi(&xs).min(w), hi(&ys).min(h));
    if !(m.is_finite() && x1 - x0 >= 21.0 && y1 - y0 >= 21.0) || (x1 - x0) * (y1 - y0) > 0.5 * w * h
    {
        return None;
    }
    let (x0, y0) = (x0 as u32, y0 as u32);
    let (cw, ch) = (
        (x1 as u32).saturating_sub(x0),
        (y1 as u32).saturating_sub(y0),
    );
    Some((crop(g, x0, y0, cw, ch), m))
}

/// The `cw`×`ch` rectangle of `g` at (`x0`, `y0`), clipped to the image, copied a row at a
/// time (`image`'s `crop_imm(..).to_image()` copies a pixel at a time).
fn crop(g: &GrayImage, x0: u32, y0: u32, cw: u32, ch: u32) -> GrayImage {
    let (x0, y0) = (x0.min(g.width()), y0.min(g.height()));
    let (cw, ch) = (cw.min(g.width() - x0), ch.min(g.height() - y0));
    let (w, x0, cwu) = (g.width() as usize, x0 as usize, cw as usize);
    let mut out = Vec::with_capacity(cwu * ch as usize);
    for row in g
        .as_raw()
        .chunks_exact(w.max(1))
        .skip(y0 as usize)
        .take(ch as usize)
    {
        out.extend_from_slice(&row[x0..x0 + cwu]);
    }
    GrayImage::from_raw(cw, ch, out).expect("buffer size matches")
}

/// What the QR search of one image may spend: work, counted in detector passes (one decoder
/// on one prepared image, each at most the working image's pixels times a strategy's fixed
/// upscale), and a wall time from the start of the read that is only a last-resort cap
/// (default 5 s, several times what the passes cost on an idle core). The work decides what is
/// tried, never the clock, so the same image reads the same on an idle and on a busy machine
/// (issue 29: the time prediction this replaced skipped the passes that read small QRs in big
/// frames whenever the machine was busy). The first `FREE_PASSES` passes ignore even the cap.
pub(crate) struct Budget {
    start: Instant,
    time: Duration,
    passes_left: u32,
    used: u32,
    /// Stage timings (name, time since the previous mark), when tracing (benchmarks only).
    trace: Option<(Instant, Vec<(&'static str, Duration)>)>,
    /// `Limits::scan_exhaustive`: the gate never ends the read, and nothing is ever spent.
    exhaustive: bool,
    /// Region passes spent (`Budget::region_pass`), and the pixels they scanned.
    region_used: u32,
    region_pixels: u64,
    /// Most pixels all region passes together may scan (`Budget::set_region_area`).
    region_pixel_cap: u64,
}

impl Budget {
    pub(crate) fn new(limits: &Limits) -> Budget {
        let exhaustive = limits.scan_exhaustive;
        Budget {
            start: Instant::now(),
            time: if exhaustive {
                Duration::MAX
            } else {
                limits.scan_time
            },
            passes_left: if exhaustive {
                u32::MAX
            } else {
                limits.scan_passes.max(1)
            },
            used: 0,
            trace: None,
            exhaustive,
            region_used: 0,
            region_pixels: 0,
            region_pixel_cap: u64::MAX,
        }
    }

    /// Bound the region passes' pixels by `REGION_AREAS` times the working image's `area`.
    fn set_region_area(&mut self, area: u64) {
        self.region_pixel_cap = area.saturating_mul(REGION_AREAS);
    }

    /// Whether the evidence gate's "no finders" may end the read (not on the exhaustive scan).
    fn gate_may_stop(&self) -> bool {
        !self.exhaustive
    }

    /// Record stage timings from now on (see [`Budget::mark`]).
    pub(crate) fn traced(mut self) -> Budget {
        self.trace = Some((Instant::now(), Vec::new()));
        self
    }

    /// When tracing, record the time since the previous mark under `stage`.
    pub(crate) fn mark(&mut self, stage: &'static str) {
        if let Some((last, log)) = &mut self.trace {
            let now = Instant::now();
            log.push((stage, now - *last));
            *last = now;
        }
    }

    /// The stage timings recorded so far (empty unless tracing).
    pub(crate) fn stages(&self) -> Vec<(&'static str, Duration)> {
        self.trace.as_ref().map(|t| t.1.clone()).unwrap_or_default()
    }

    /// Whether nothing more may be spent (checked before paying for a preparation too).
    fn spent(&self) -> bool {
        self.passes_left == 0 || (self.used >= FREE_PASSES && self.start.elapsed() >= self.time)
    }

    /// Whether a pass may start: passes left, and the last-resort cap not reached. (Every
    /// pass is bounded in pixels by the working size, so passes are the measure of work.)
    fn affords(&self, _pixels: u64) -> bool {
        !self.spent()
    }

    /// Take one pass over `pixels` if the budget allows it.
    fn take(&mut self, pixels: u64) -> bool {
        if !self.affords(pixels) {
            return false;
        }
        self.passes_left -= 1;
        self.used += 1;
        true
    }

    /// Run one detector pass over `g` if the budget allows it, learning its cost.
    fn pass<T>(&mut self, g: &GrayImage, detect: impl FnOnce(&GrayImage) -> T) -> Option<T> {
        let pixels = u64::from(g.width()) * u64::from(g.height());
        if !self.take(pixels) {
            return None;
        }
        Some(self.timed(g, pixels, detect))
    }

    /// Run `detect` on `g`.
    fn timed<T>(&mut self, g: &GrayImage, _pixels: u64, detect: impl FnOnce(&GrayImage) -> T) -> T {
        detect(g)
    }

    /// Run one pass over a QR region's preparation (at most half the working image, mostly a
    /// few percent): counted apart from `scan_passes`, at most `REGION_PASSES` per read, so the
    /// region's cheap tries never use up the whole-image passes that read what they miss
    /// (issue 29: two thermal prints read by `local-mean` were lost when two regions' six
    /// passes had spent the budget). Never a free pass; not after the last-resort cap.
    fn region_pass<T>(&mut self, g: &GrayImage, detect: impl FnOnce(&GrayImage) -> T) -> Option<T> {
        if !self.region_affords() {
            return None;
        }
        self.region_used += 1;
        self.region_pixels += area(g);
        Some(detect(g))
    }

    /// Whether a region pass may start.
    fn region_affords(&self) -> bool {
        self.exhaustive
            || (self.region_used < REGION_PASSES
                && self.region_pixels < self.region_pixel_cap
                && self.start.elapsed() < self.time)
    }

    /// Passes spent so far.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u32 {
        self.used
    }
}

/// Try the plain image then every strategy within `budget`, returning the texts of the first
/// one that finds any QR code together with the strategy's name.
///
/// Order: the cheap half-size pass (images with a short side ≥ `HALF_FIRST_MIN_SIDE`), the
/// plain working image (inverted first in dark mode), then — only if the evidence gate sees
/// three finder patterns placed like a QR's — the strategies, rqrr and the full resolution.
/// Where the half pass ran, the gate runs right after it (on big images on the half-size copy
/// first, 1–2 ms when the finders show there), so a picture without a QR fails after the half
/// pass and the gate, without the plain pass over 0.2–6 Mpx; and the strategies on the QR
/// region it found run before the plain pass. In dark mode the strategies work on the inverted
/// image (the decoders want dark modules); on a low-contrast image the global threshold goes
/// first.
pub(crate) fn run_named(full: &GrayImage, budget: &mut Budget) -> (Vec<String>, &'static str) {
    let work = fit(full, WORK_SIDE);
    let work: &GrayImage = &work;
    budget.mark("fit");
    let plain_name = if work.dimensions() == full.dimensions() {
        "as-is"
    } else {
        "fit"
    };
    let stats = Stats::of(work);
    let dark = stats.dark();
    // The gate's polarity prior, worked out once here.
    let known_dark = OnceCell::from(dark);
    let short = work.width().min(work.height());
    budget.set_region_area(area(work));
    let mut gated: Option<Evidence> = None;
    // Whether the 2×2 average of `work` itself (not inverted) was scanned, and the inverted
    // `work`: the whole-image strategies "half" and "inverted" would scan the same images
    // again, with the same (deterministic) result.
    let mut half_scanned = false;
    let mut inverted_scanned = false;
    // Cheap pass: rxing's binarizer is most of a scan and costs per pixel, so first try rxing
    // alone on a 2×2-averaged copy (a quarter of the pixels). Most slips end here; any miss
    // goes through the full sequence below, unchanged, at the full working resolution.
    // (Without TryHarder rxing is only ~15 % faster and misses ~1 slip in 5: not worth it.)
    // Dark mode is inverted (on the small copy) so the finder patterns are dark.
    if short >= HALF_FIRST_MIN_SIDE {
        let half = box_downscale(work, 2);
        let found = if dark {
            budget.pass(&invert(&half), |g| scan_rxing(g, true))
        } else {
            budget.pass(&half, |g| scan_rxing(g, true))
        }
        .unwrap_or_default();
        half_scanned = !dark;
        budget.mark("half-first");
        if !found.is_empty() {
            return (found, if dark { "inverted-half" } else { "half-first" });
        }
        // Big and mid-size images: no finder pattern anywhere, so neither the plain pass
        // nor the strategies would read it. (The gate looks at the 2×2 average first, a quarter
        // of the pixels; the QR region it finds is tried before the plain pass below.)
        let evidence = finder_evidence_with_half(work, &half, &known_dark);
        budget.mark("gate");
        if !evidence.qr_like && budget.gate_may_stop() {
            return (Vec::new(), "no-finder");
        }
        gated = Some(evidence);
    }
    let low_contrast = stats.low_contrast();
    // The half pass failed but the gate saw the finders: a slip whose half-size copy does not
    // read is mostly a thermal print or a photo whose code needs a preparation, so the QR
    // region's strategies (a few percent of the image each) go before the plain pass. Measured
    // on the hard families: saves the plain pass on 11 of 12 thermal prints; the slips the
    // plain pass read before still read, in the region or after it.
    // One inverted copy: for dark mode's first pass, and for the strategies when the finders
    // have light centres.
    let mut inverted: Option<GrayImage> = None;
    // The triples whose QR regions were tried (each place once).
    let mut tried: [Vec<Triple>; 2] = [Vec::new(), Vec::new()];
    let mut soft_look = false;
    if let Some(mut evidence) = gated.take() {
        let mut region = |evidence: &Evidence, budget: &mut Budget| {
            regions(
                work,
                &mut inverted,
                evidence,
                low_contrast,
                budget,
                &mut tried,
            )
        };
        if let Some(found) = region(&evidence, budget) {
            return found;
        }
        // A triple seen on the 2×2 average alone can be a false one (speckle or text on a
        // receipt) while the code's own finders only show at full scale, with another
        // polarity: there the gate decides, for the region and the strategies after it.
        let crowded = |e: &Evidence| e.hits >= SWAMPED_HITS || e.centres >= EVIDENCE_MAX_CENTRES;
        let mut swamped = crowded(&evidence);
        if evidence.coarse && !budget.spent() {
            let fine = fine_evidence(work, &known_dark);
            budget.mark("gate");
            swamped |= crowded(&fine);
            if fine.qr_like {
                if let Some(found) = region(&fine, budget) {
                    return found;
                }
                evidence = fine;
            }
        }
        soft_look = swamped;
        gated = Some(evidence);
    }
    if dark {
        let inv: &GrayImage = inverted.get_or_insert_with(|| invert(work));
        if !budget.spent() {
            // Dark-mode slips: inverted before the plain image.
            let found = scan(inv, budget);
            inverted_scanned = true;
            budget.mark("dark");
            if !found.is_empty() {
                return (found, "dark");
            }
        }
    }
    let found = scan(work, budget);
    budget.mark("plain");
    if !found.is_empty() {
        return (found, plain_name);
    }
    // Moiré: a photographed screen's beating gratings make finder-like runs everywhere, and
    // the code's own finders drown among the gate's candidates (its hits or the centres it
    // keeps reach their bounds). Twice a 3×3 box blur flattens gratings of a few px while
    // modules of 3 px and more keep their runs; the gate's triples on that copy give more QR
    // regions (cut from the image itself). Only adds regions: the gate's decisions stay the
    // ones above. (After the plain pass: text-heavy slips crowd the candidates too, and the
    // plain pass reads most of them for less.)
    if soft_look && !budget.spent() {
        let soft = fine_evidence(&box_blur3(&box_blur3(work)), &known_dark);
        budget.mark("gate-soft");
        if soft.qr_like {
            let found = regions(work, &mut inverted, &soft, low_contrast, budget, &mut tried);
            if let Some(found) = found {
                return found;
            }
        }
    }
    let region_tried = gated.is_some();
    // No finder pattern anywhere: the strategies below would only burn the budget.
    let evidence = match gated {
        Some(e) => e,
        None => {
            let e = finder_evidence_known(work, &known_dark);
            budget.mark("gate");
            if !e.qr_like && budget.gate_may_stop() {
                return (Vec::new(), "no-finder");
            }
            e
        }
    };
    // The strategies prepare the image the decoders read best: dark modules on light, so
    // inverted when the finders the gate saw have light centres (not by the mean alone: a
    // dimly lit photo of a receipt has a low mean and dark ink).
    let base: Cow<'_, GrayImage> = if evidence.light {
        Cow::Owned(inverted.unwrap_or_else(|| invert(work)))
    } else {
        Cow::Borrowed(work)
    };
    let base: &GrayImage = &base;
    // The QR region the gate found, at most half the image: the strategies that read late
    // reads (closing, upscale, threshold, rqrr) first run there, at a fraction of the cost.
    // (Done already, before the plain pass, when the gate ran early.)
    if !region_tried {
        if let Some(found) = try_region(
            base,
            &evidence,
            low_contrast,
            budget,
            false,
            &mut tried[usize::from(evidence.light)],
        ) {
            return found;
        }
    }
    // Finder-like centres placed like a QR's, but no timing pattern between any such triple:
    // text, a photo or random modules. The whole-image strategies (most of a failing read's
    // work) are skipped; the plain pass and the region's passes ran already.
    if !evidence.timing && budget.gate_may_stop() {
        return (Vec::new(), "no-timing");
    }
    let order = STRATEGIES
        .iter()
        .filter(|s| low_contrast && s.name == "otsu")
        .chain(
            STRATEGIES
                .iter()
                .filter(|s| !(low_contrast && s.name == "otsu")),
        );
    for s in order {
        // The other polarity was the plain pass (or the dark pass scanned it).
        if s.name == "inverted" && (evidence.light || inverted_scanned) {
            continue;
        }
        // The first pass scanned this very image.
        if s.name == "half" && half_scanned && !evidence.light {
            continue;
        }
        if budget.spent() {
            return (Vec::new(), "budget");
        }
        // Not even one pass over the prepared image fits: skip the preparation's cost too.
        let area = u64::from(work.width()) * u64::from(work.height());
        if !budget.affords(area * prepared_scale(s.name, work)) {
            continue;
        }
        if let Some(img) = (s.prep)(base) {
            budget.mark("prep");
            let found = scan(&img, budget);
            budget.mark(s.name);
            if !found.is_empty() {
                return (found, s.name);
            }
            // Thermal prints rxing misses even closed: rqrr on the same closed image, when
            // small (measured: it read one such print, ahead of the upscale and thresholds
            // that read none and cost more).
            if s.name == "close" && area <= RQRR_MAX_PIXELS && !budget.spent() {
                let found = budget.pass(&img, scan_rqrr).unwrap_or_default();
                budget.mark("close+rqrr");
                if !found.is_empty() {
                    return (found, "close+rqrr");
                }
            }
        }
    }
    // rqrr reads a few images rxing misses (some thermal prints) but costs 5–10× an rxing pass
    // per pixel and never wins on big images: last, small ones only.
    if u64::from(work.width()) * u64::from(work.height()) <= RQRR_MAX_PIXELS {
        for (name, prep) in RQRR_TAIL {
            if budget.spent() {
                break;
            }
            let img = prep(base);
            budget.mark("prep");
            let found = budget.pass(&img, scan_rqrr);
            budget.mark(name);
            if let Some(found) = found.filter(|f| !f.is_empty()) {
                return (found, name);
            }
        }
    }
    // Last resort for big photos: the full resolution (the QR may be small in the frame).
    // Capped so a hostile 40 Mpx upload cannot cost seconds of scanning.
    let pixels = u64::from(full.width()) * u64::from(full.height());
    if work.dimensions() != full.dimensions() && pixels <= FULL_RES_MAX_PIXELS {
        let found = scan(full, budget);
        budget.mark("full-res");
        if !found.is_empty() {
            return (found, "full-res");
        }
    }
    (Vec::new(), if budget.spent() { "budget" } else { "none" })
}

/// The region strategies on the QR regions of `evidence`'s triples ([`try_region`], before
/// the plain pass), in the polarity its finders have (`inverted`: the working image inverted,
/// made on first use); when light finders were chosen on a page that is not dark mode, also
/// the dark triple's and the others' regions as they are. `tried`: the triples tried so far,
/// per polarity.
fn regions(
    work: &GrayImage,
    inverted: &mut Option<GrayImage>,
    evidence: &Evidence,
    low_contrast: bool,
    budget: &mut Budget,
    tried: &mut [Vec<Triple>; 2],
) -> Option<(Vec<String>, &'static str)> {
    let base = if evidence.light {
        inverted.get_or_insert_with(|| invert(work))
    } else {
        work
    };
    let light = usize::from(evidence.light);
    let found = try_region(
        base,
        evidence,
        low_contrast,
        budget,
        true,
        &mut tried[light],
    );
    if found.is_some() || !evidence.light {
        return found;
    }
    // Light-centred finders: a photographed screen's moiré (or texture) can out-number a dark
    // code's own finders, and the regions above were read inverted. The best dark triple's
    // region, as it is (the others were tried in the finders' polarity). (Also in "dark mode"
    // by the mean: a light page photographed in a dark surround has a low mean.)
    let flipped = Evidence {
        light: false,
        finders: evidence.alt,
        finders_timing: true,
        others: [None; OTHER_REGIONS],
        ..*evidence
    };
    try_region(work, &flipped, low_contrast, budget, true, &mut tried[0])
}

/// Cheap statistics of the working image (one pass): its mean and the levels below which 2 %
/// and 98 % of its pixels lie, used to choose the order of the strategies.
struct Stats {
    mean: u64,
    lo: u8,
    hi: u8,
}

/// Spread (98th minus 2nd percentile level) under which an image counts as low-contrast:
/// a dim dark-mode card (modules ~110 on ~40) is, a thermal print (ink ~90 on paper ~225) or
/// any ordinary slip is not.
const LOW_CONTRAST_SPREAD: u8 = 100;

impl Stats {
    fn of(g: &GrayImage) -> Stats {
        // Four histograms, one per lane of every 4 pixels, summed after: one histogram's
        // count of a repeated level (a flat white slip) is a chain of dependent increments,
        // each waiting on the store before it.
        let mut lanes = [[0u32; 256]; 4];
        let mut hist = [0u64; 256];
        for block in g.as_raw().chunks(1 << 24) {
            let mut quads = block.chunks_exact(4);
            for q in &mut quads {
                for (lane, &p) in lanes.iter_mut().zip(q) {
                    lane[usize::from(p)] += 1;
                }
            }
            for &p in quads.remainder() {
                lanes[0][usize::from(p)] += 1;
            }
            // A lane counts at most 2^22 of a block's 2^24 pixels: no u32 overflows.
            for lane in &mut lanes {
                for (h, c) in hist.iter_mut().zip(lane.iter_mut()) {
                    *h += u64::from(std::mem::take(c));
                }
            }
        }
        let n: u64 = hist.iter().sum();
        let sum: u64 = hist.iter().enumerate().map(|(v, &c)| v as u64 * c).sum();
        let level = |frac: u64| {
            let target = n * frac / 100;
            let mut seen = 0;
            for (v, &c) in hist.iter().enumerate() {
                seen += c;
                if seen > target {
                    return v as u8;
                }
            }
            255
        };
        Stats {
            mean: sum.checked_div(n).unwrap_or(255),
            lo: level(2),
            hi: level(98),
        }
    }

    /// Dark mode: tried inverted first.
    fn dark(&self) -> bool {
        self.mean < DARK_MEAN
    }

    /// Little spread between dark and light: a global threshold reads it before the rest.
    fn low_contrast(&self) -> bool {
        self.hi.saturating_sub(self.lo) < LOW_CONTRAST_SPREAD
    }
}

/// A pixel counts as dark for the evidence gate only this far below its local mean, so the
/// noise of a flat page does not binarise into speckle that mimics finder patterns.
const EVIDENCE_BIAS: i32 = 10;
/// Most finder-pattern hits and candidate centres the evidence gate collects (bounds its cost
/// on pathological textures; a slip has three finders).
const EVIDENCE_MAX_HITS: usize = 20_000;
const EVIDENCE_MAX_CENTRES: usize = 48;
/// Finder hits from which the gate's look counts as swamped by texture (moiré): the QR
/// regions of a blurred copy's triples are tried too.
const SWAMPED_HITS: usize = EVIDENCE_MAX_HITS / 4;

/// What the evidence gate saw (for tests and benchmarks).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evidence {
    /// Row 1:1:3:1:1 runs confirmed down the column and the diagonal through their centre.
    pub hits: usize,
    /// Those hits merged into candidate finder centres (seen on at least two rows).
    pub centres: usize,
    /// Whether three centres of similar module size sit like a QR's three finders.
    pub qr_like: bool,
    /// Whether those three finders have light centres (a light-on-dark code: dark mode), so
    /// the strategies should read the inverted image.
    pub light: bool,
    /// The three finders (x, y, module size in the working image; the corner first) of the
    /// best-supported triple, when `qr_like`.
    pub finders: Option<[(f32, f32, f32); 3]>,
    /// Whether the triple was seen on the 2×2 average, without a look at the working scale.
    pub coarse: bool,
    /// Whether some QR-like triple also shows the two timing patterns between its finders
    /// (`timing_patterns`): without them the read ends after the QR region's passes, before
    /// the whole-image ones.
    pub timing: bool,
    /// Up to `OTHER_REGIONS` more QR-like triples that show timing patterns, elsewhere than
    /// `finders` (a slip's header or logo can out-score the code's own finders): their QR
    /// regions are tried after the chosen one's.
    pub others: [Option<Triple>; OTHER_REGIONS],
    /// Whether `finders` itself shows the timing patterns (else its region is tried after the
    /// others').
    pub finders_timing: bool,
    /// When the finders chosen are light-centred, the best triple of dark-centred ones.
    pub alt: Option<Triple>,
}

/// Three finder centres (x, y, module; the corner first).
pub type Triple = [(f32, f32, f32); 3];

/// Most QR regions tried besides the gate's chosen triple's (per look: the 2×2 average and
/// the working scale).
pub const OTHER_REGIONS: usize = 2;

/// Whether two triples span about the same QR (their centroids within 10 modules).
fn same_place(a: &Triple, b: &Triple) -> bool {
    let c = |t: &Triple| {
        (
            (t[0].0 + t[1].0 + t[2].0) / 3.0,
            (t[0].1 + t[1].1 + t[2].1) / 3.0,
            (t[0].2 + t[1].2 + t[2].2) / 3.0,
        )
    };
    let (a, b) = (c(a), c(b));
    (a.0 - b.0).hypot(a.1 - b.1) < 10.0 * a.2.max(b.2)
}

/// Cheap evidence that `work` holds a QR code, checked after the free passes fail: on a
/// local-mean binarisation (at the working scale, and for big images first its 2×2 average)
/// look for finder-pattern-like 1:1:3:1:1 runs along a row, confirmed along the column and the
/// diagonal through their centre (the rings are concentric squares, so every line through the
/// centre crosses them in that ratio whatever the rotation); merge them into candidate centres;
/// and ask for three of similar module size placed like a QR's finders (two sides of about
/// equal length at about a right angle). Images without that (pictures that are not slips)
/// skip the expensive strategies: failing then costs the decode, the two free passes and this
/// check. Tolerances are loose (2 px modules, JPEG, speckle, perspective): a false "yes" costs
/// only time, a false "no" costs a read.
pub(crate) fn finder_evidence(work: &GrayImage) -> Evidence {
    finder_evidence_known(work, &OnceCell::new())
}

/// [`finder_evidence`], with whether `work` is dark mode (`Stats::dark`) when known already.
fn finder_evidence_known(work: &GrayImage, dark: &OnceCell<bool>) -> Evidence {
    if work.width().min(work.height()) >= HALF_GATE_MIN_SIDE {
        return finder_evidence_with_half(work, &box_downscale(work, 2), dark);
    }
    finder_evidence_with_half(work, work, dark)
}

/// The region strategies (`CROP_STRATEGIES`) on the QR region `evidence` found in `base`
/// (the working image in the polarity the finders have): `Some` with the answer when one read
/// it or the budget ran out, `None` to go on with the whole image.
/// `early`: before the plain pass; out of time they give way to it (`None`) instead of ending
/// the read. Their passes are region passes ([`Budget::region_pass`]).
fn try_region(
    base: &GrayImage,
    evidence: &Evidence,
    low_contrast: bool,
    budget: &mut Budget,
    early: bool,
    tried: &mut Vec<Triple>,
) -> Option<(Vec<String>, &'static str)> {
    // Triples that show timing patterns first: the chosen one, else the others.
    let chosen = evidence.finders.iter().map(|f| (f, true));
    let others = evidence.others.iter().flatten().map(|f| (f, false));
    let mut order: Vec<(&Triple, bool)> = if evidence.finders_timing {
        chosen.chain(others).collect()
    } else {
        others.chain(chosen).collect()
    };
    // Regions the size of a slip's code before bigger ones (a false triple spanning text or a
    // photo): those cost the most and would spend the region budget first.
    order.sort_by_key(|(f, _)| !slip_sized(f));
    for (f, is_chosen) in order {
        // The chosen triple's region is tried again when the triple differs at all (the
        // working scale's centres and module size crop differently from the 2×2 average's,
        // and read what the other crop did not); another triple's only in a new place.
        let seen = if is_chosen {
            tried.contains(f)
        } else {
            tried.iter().any(|t| same_place(t, f))
        };
        if seen
            || (!is_chosen && region_modules2(f) > REGION_MAX_MODULES2 && budget.gate_may_stop())
        {
            continue;
        }
        tried.push(*f);
        if let Some(found) = try_one_region(base, f, low_contrast, budget, early) {
            return Some(found);
        }
    }
    None
}

/// [`try_region`] on the QR region of one triple.
fn try_one_region(
    base: &GrayImage,
    f: &Triple,
    low_contrast: bool,
    budget: &mut Budget,
    early: bool,
) -> Option<(Vec<String>, &'static str)> {
    let (crop, module) = qr_region(base, f)?;
    budget.mark("crop");
    let region = Region::new(&crop, module, low_contrast);
    for (name, prep) in CROP_STRATEGIES {
        if budget.spent() && !early {
            return Some((Vec::new(), "budget"));
        }
        if !budget.region_affords() {
            return None;
        }
        let Some(img) = prep(&region) else {
            continue;
        };
        budget.mark("prep");
        let detect = if name.ends_with("rqrr") {
            scan_rqrr
        } else {
            |g: &GrayImage| scan_rxing(g, true)
        };
        let found = budget.region_pass(&img, detect).unwrap_or_default();
        budget.mark(name);
        if !found.is_empty() {
            return Some((found, name));
        }
    }
    if !small_triple(f) {
        return None;
    }
    // A triple too small to be a slip code's finders: on a thermal print, one real finder and
    // speckle inside the code (or three such), whose region cuts the code off. Its wide region,
    // through the local-mean thresholds.
    let (wide, module) = qr_region_padded(base, f, WIDE_PAD_MODULES)?;
    budget.mark("crop");
    for (name, prep) in WIDE_STRATEGIES {
        if budget.spent() && !early {
            return Some((Vec::new(), "budget"));
        }
        if !budget.region_affords() {
            return None;
        }
        let img = prep(&wide, module);
        budget.mark("prep");
        let found = budget
            .region_pass(&img, |g| scan_rxing(g, true))
            .unwrap_or_default();
        budget.mark(name);
        if !found.is_empty() {
            return Some((found, name));
        }
    }
    None
}

/// Modules of slack each side of a small triple's wide region (see [`small_triple`]): a slip's
/// code (29–33 modules) around a finder or speckle anywhere in it. Measured on the tuning
/// images (seed 1665496525): 10 modules read none of the five, 20 four, 25 and 30 all five.
const WIDE_PAD_MODULES: f32 = 25.0;
/// Longest finder-to-finder side (in modules) of a triple too small to be a slip code's: slip
/// payloads (51–64 characters in the corpus and the draws) need version 3 or more (29
/// modules, finders 22 apart). A real code's triple counted small (its module size
/// over-estimated) only pays the wide region's two passes more: the rule adds work, never
/// skips any.
const SMALL_TRIPLE_MODULES: f32 = 20.0;

/// Whether both sides of the triple (corner first) are shorter than `SMALL_TRIPLE_MODULES`.
fn small_triple(f: &Triple) -> bool {
    let [a, b, c] = *f;
    let m = (a.2 + b.2 + c.2) / 3.0;
    let side = |p: (f32, f32, f32)| (p.0 - a.0).hypot(p.1 - a.1);
    m > 0.0 && side(b).max(side(c)) < SMALL_TRIPLE_MODULES * m
}

/// A preparation of a wide QR region of the given module size.
type WidePrep = fn(&GrayImage, f32) -> GrayImage;

/// The preparations of a small triple's wide region ([`small_triple`]), each for one rxing
/// pass: thresholds against the mean of ±8 and ±4 modules (a thermal print's faded band and
/// streaks shift the level across the code).
const WIDE_STRATEGIES: &[(&str, WidePrep)] = &[
    ("wide+mean", |c, m| {
        mean_binarize_radius(c, (8.0 * m) as usize, 1, 1)
    }),
    ("wide+mean4", |c, m| {
        mean_binarize_radius(c, (4.0 * m) as usize, 1, 1)
    }),
];

/// [`finder_evidence`] given `half`, the 2×2 average of `work` (the first pass made it already;
/// unused below `HALF_GATE_MIN_SIDE`).
fn finder_evidence_with_half(
    work: &GrayImage,
    half: &GrayImage,
    dark: &OnceCell<bool>,
) -> Evidence {
    let mut hits: Vec<Hit> = Vec::new();
    if work.width().min(work.height()) >= HALF_GATE_MIN_SIDE {
        let bin = evidence_binarize(half);
        finder_hits_in(&bin, 7, &mut |x, y, m, l| {
            hits.push((2.0 * x, 2.0 * y, 2.0 * m, l))
        });
        // Most slips show their finders here already; the full scale only for the rest.
        let e = evidence_of(work, &hits, true, dark);
        if e.qr_like {
            return e;
        }
    }
    fine_hits(work, &mut hits);
    evidence_of(work, &hits, false, dark)
}

/// The evidence gate at the working scale alone: what decides when the triple seen on the
/// 2×2 average (`Evidence::coarse`) led to a region that did not read.
fn fine_evidence(work: &GrayImage, dark: &OnceCell<bool>) -> Evidence {
    let mut hits: Vec<Hit> = Vec::new();
    fine_hits(work, &mut hits);
    evidence_of(work, &hits, false, dark)
}

/// The gate's finder hits at the working scale (and, for thumbnails, on a Lanczos ×2).
fn fine_hits(work: &GrayImage, hits: &mut Vec<Hit>) {
    let short = work.width().min(work.height());
    // On big images only modules of 2 px and more at full scale: smaller ones were seen on
    // the average, and 1 px "patterns" in a big image are mostly noise.
    let min_total = if short >= CHEAP_HALF_MIN_SIDE { 14 } else { 7 };
    let bin = evidence_binarize(work);
    finder_hits_in(&bin, min_total, &mut |x, y, m, l| hits.push((x, y, m, l)));
    // Thumbnails: 1–2 px modules blur into each other; the Lanczos ×2 the strategies use
    // anyway restores the runs (cheap at this size).
    if short < GATE_UPSCALE_MAX_SIDE && find_triple(&centres_of(hits).0, |_| true).is_none() {
        let bin = evidence_binarize(&upscale_lanczos(work, 2));
        finder_hits_in(&bin, 14, &mut |x, y, m, l| {
            hits.push((x / 2.0, y / 2.0, m / 2.0, l))
        });
    }
}

/// What `hits` in `work` say: a QR-like triple of finder centres, and its polarity (`dark`:
/// whether `work` is dark mode, worked out here only when a light triple needs it).
fn evidence_of(work: &GrayImage, hits: &[Hit], coarse: bool, dark: &OnceCell<bool>) -> Evidence {
    let (pts, light, seen) = centres_of(hits);
    let any = find_triple(&pts, |_| true);
    // Polarity: the best-supported triple whose three centres agree (a QR's finders all
    // have the same), so a stray mixed triple in text cannot decide it.
    let agreeing = |light_centres: bool| {
        best_triple(&pts, &seen, |i| (light[i] > 0.5) == light_centres)
            .map(|t| (t.iter().map(|&i| seen[i]).sum::<u32>(), t))
    };
    let (dark_t, light_t) = if any.is_some() {
        (agreeing(false), agreeing(true))
    } else {
        (None, None)
    };
    // The finders decide against the mean luminance only by a clear margin (2×): a
    // textured header or speckle can mimic a few finders of either polarity.
    let prior_dark = light_t.is_some() && *dark.get_or_init(|| Stats::of(work).dark());
    let margin = if prior_dark { 0.5 } else { 2.0 };
    let is_light = light_t.is_some_and(|l| dark_t.is_none_or(|d| l.0 as f32 > margin * d.0 as f32));
    let chosen = if is_light { light_t } else { dark_t }.map(|t| t.1).or(any);
    let finders = chosen.map(|t| t.map(|i| pts[i]));
    let alt = if is_light { dark_t } else { None }.map(|t| t.1.map(|i| pts[i]));
    // The chosen triple first, then any other the gate accepts (a textured header's triple
    // may have been chosen over the code's own).
    // The other triples with timing patterns, elsewhere, are kept for their QR regions (the
    // chosen one may be a header's): looked at best-supported first (as `best_triple` scores
    // them), until `OTHER_REGIONS` are found, at most `TIMING_MAX_TRIPLES` in all.
    let mut others: [Option<Triple>; OTHER_REGIONS] = [None; OTHER_REGIONS];
    let mut finders_timing = false;
    let timing = finders.is_some_and(|f| {
        finders_timing = timing_patterns(work, &f);
        let mut ok = finders_timing;
        let mut cands: Vec<(f32, Triple)> = Vec::new();
        for_each_triple(&pts, &|_| true, &mut |t| {
            cands.push((triple_score(&pts, &seen, t), t.map(|i| pts[i])));
            cands.len() >= TIMING_MAX_CANDIDATES
        });
        cands.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut n = 0;
        for (tried, (_, t)) in cands.iter().enumerate() {
            if tried >= TIMING_MAX_TRIPLES {
                ok = true;
                break;
            }
            // A place that gave a region already needs no second one (its timing said yes).
            if others[..n].iter().flatten().any(|o| same_place(o, t)) {
                continue;
            }
            if timing_patterns(work, t) {
                ok = true;
                // The chosen triple's place has its region already: another combination of
                // centres there counts for the timing, not as a region.
                if !same_place(t, &f) {
                    others[n] = Some(*t);
                    n += 1;
                    if n == OTHER_REGIONS {
                        break;
                    }
                }
            }
        }
        ok
    });
    Evidence {
        hits: hits.len(),
        centres: pts.len(),
        qr_like: any.is_some(),
        light: is_light,
        finders,
        coarse: coarse && any.is_some(),
        timing,
        others,
        finders_timing,
        alt,
    }
}

/// Most triples whose timing patterns are looked at; beyond, the evidence counts as timing
/// (unknown is "yes": a false "no" costs a read).
const TIMING_MAX_TRIPLES: usize = 256;
/// Most QR-like triples ranked for the timing check (bounds its cost on a textured page).
const TIMING_MAX_CANDIDATES: usize = 4096;

/// Whether the finders (x, y, module; corner first) of a QR-like triple in `work` show the two
/// timing patterns a QR code has between them: the row and column 6 of the code, alternating
/// dark and light one module at a time from finder to finder. Along each side, the line
/// between the two centres moved 3 modules towards the third finder is sampled (several
/// offsets around it: centres and module sizes are estimates) and cut into runs against a
/// local mean with a hysteresis of a quarter of the finders' own contrast; the side shows its
/// pattern when runs of about one module cover at least half its modules. Sides of fewer than
/// 5 timing modules (version 1) count as shown. Loose on purpose (perspective, blur, speckle);
/// what it rules out is the usual false triple: finder-like blobs in text, random modules or
/// a photo, whose lines between them are flat or irregular.
fn timing_patterns(work: &GrayImage, f: &[(f32, f32, f32); 3]) -> bool {
    let [a, b, c] = *f;
    timing_side(work, a, b, c) && timing_side(work, a, c, b)
}

/// One timing pattern of [`timing_patterns`]: from finder `p` to finder `q`, on the side of `r`.
fn timing_side(
    work: &GrayImage,
    p: (f32, f32, f32),
    q: (f32, f32, f32),
    r: (f32, f32, f32),
) -> bool {
    let (ux, uy) = (q.0 - p.0, q.1 - p.1);
    let d = (ux * ux + uy * uy).sqrt();
    let (sx, sy) = (r.0 - p.0, r.1 - p.1);
    let ds = (sx * sx + sy * sy).sqrt();
    if !(d.is_finite() && ds.is_finite()) || d < 1.0 || ds < 1.0 {
        return true;
    }
    let (ux, uy, sx, sy) = (ux / d, uy / d, sx / ds, sy / ds);
    // The gate's module sizes come from row runs, which a rotated finder stretches by up to
    // √2: scale by the side's direction.
    let stretch = ux.abs().max(uy.abs()).max(0.5);
    let m = (p.2 + q.2 + r.2) / 3.0 * stretch;
    if !(m.is_finite() && m > 0.0) {
        return true;
    }
    let modules = d / m - 9.0;
    if modules < 5.0 {
        return true;
    }
    let (raw, stride) = (work.as_raw(), work.width() as usize);
    let sample = |x: f32, y: f32| -> Option<f32> {
        let (w, h) = (work.width() as f32, work.height() as f32);
        if !(x >= 0.0 && y >= 0.0 && x < w - 1.0 && y < h - 1.0) {
            return None;
        }
        let (x0, y0) = (x as u32, y as u32);
        let (fx, fy) = (x - x0 as f32, y - y0 as f32);
        // In bounds (checked above): the raw buffer, without `get_pixel`'s checks.
        let px = |x: u32, y: u32| f32::from(raw[y as usize * stride + x as usize]);
        let top = px(x0, y0) * (1.0 - fx) + px(x0 + 1, y0) * fx;
        let bot = px(x0, y0 + 1) * (1.0 - fx) + px(x0 + 1, y0 + 1) * fx;
        Some(top * (1.0 - fy) + bot * fy)
    };
    // The finders' contrast: centre against the light ring 2 modules out.
    let contrast = |f: (f32, f32, f32)| {
        let ring = [(1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.0, -1.0)]
            .iter()
            .filter_map(|&(ex, ey)| {
                let (ex, ey) = (ex * ux - ey * uy, ex * uy + ey * ux);
                sample(f.0 + 2.0 * m * ex, f.1 + 2.0 * m * ey)
            })
            .collect::<Vec<_>>();
        let centre = sample(f.0, f.1)?;
        (!ring.is_empty()).then(|| (centre - ring.iter().sum::<f32>() / ring.len() as f32).abs())
    };
    let cs: Vec<f32> = [p, q].into_iter().filter_map(contrast).collect();
    if cs.is_empty() {
        return true;
    }
    let hyst = (cs.iter().sum::<f32>() / cs.len() as f32 / 4.0).max(3.0);
    let step = (m / 3.0).clamp(0.5, 2.0);
    let (t0, t1) = (4.5 * m, d - 4.5 * m);
    let n = ((t1 - t0) / step) as usize;
    let half = (2.0 * m / step) as usize;
    let mut profile = Vec::with_capacity(n);
    [2.2f32, 2.6, 3.0, 3.4].iter().any(|&off| {
        profile.clear();
        for i in 0..n {
            let t = t0 + i as f32 * step;
            let (x, y) = (p.0 + ux * t + sx * off * m, p.1 + uy * t + sy * off * m);
            match sample(x, y) {
                Some(v) => profile.push(v),
                None => return true,
            }
        }
        // Runs against the local mean (±2 modules), with hysteresis.
        let mut prefix = vec![0f32; n + 1];
        for (i, v) in profile.iter().enumerate() {
            prefix[i + 1] = prefix[i] + v;
        }
        let mut state: Option<bool> = None;
        let mut run_start = 0usize;
        let mut good = 0usize;
        let mut first = true;
        for (i, &v) in profile.iter().enumerate() {
            let (lo, hi) = (i.saturating_sub(half), (i + half + 1).min(n));
            let mean = (prefix[hi] - prefix[lo]) / (hi - lo) as f32;
            let now = if v > mean + hyst {
                Some(true)
            } else if v < mean - hyst {
                Some(false)
            } else {
                state
            };
            if now != state {
                if state.is_some() {
                    let len = (i - run_start) as f32 * step;
                    if !first && len >= 0.4 * m && len <= 1.7 * m {
                        good += 1;
                    }
                    first = false;
                }
                state = now;
                run_start = i;
            }
        }
        good as f32 >= 0.5 * modules
    })
}

/// A finder-pattern hit: centre x, y, module size, and whether its centre is light.
type Hit = (f32, f32, f32, bool);

/// Merge finder hits into candidate centres (x, y, module) seen on at least two rows (a finder
/// pattern gives one hit per row across its centre block), most-seen first; with each, the
/// fraction of its hits whose centre is light.
#[allow(clippy::type_complexity)]
fn centres_of(hits: &[Hit]) -> (Vec<(f32, f32, f32)>, Vec<f32>, Vec<u32>) {
    // (x sum, y sum, m sum, n, light n)
    let mut centres: Vec<(f32, f32, f32, u32, u32)> = Vec::new();
    // Each centre's means, (x, y, m) sum / n, kept beside it (the same divisions, made once
    // per new hit instead of once per comparison: on moiré, thousands of hits × 192 centres).
    let mut means: Vec<(f32, f32, f32)> = Vec::new();
    let mean = |c: &(f32, f32, f32, u32, u32)| {
        let n = c.3 as f32;
        (c.0 / n, c.1 / n, c.2 / n)
    };
    for &(x, y, m, l) in hits {
        let near = means.iter().position(|&(cx, cy, cm)| {
            (cx - x).abs() <= 2.0 * cm.max(m) && (cy - y).abs() <= 4.0 * cm.max(m)
        });
        match near {
            Some(i) => {
                let c = &mut centres[i];
                *c = (c.0 + x, c.1 + y, c.2 + m, c.3 + 1, c.4 + u32::from(l));
                means[i] = mean(c);
            }
            None if centres.len() < 4 * EVIDENCE_MAX_CENTRES => {
                centres.push((x, y, m, 1, u32::from(l)));
                means.push(mean(&(x, y, m, 1, 0)));
            }
            None => {}
        }
    }
    centres.retain(|c| c.3 >= 2);
    centres.sort_by_key(|c| std::cmp::Reverse(c.3));
    centres.truncate(EVIDENCE_MAX_CENTRES);
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for c in &centres {
        let n = c.3 as f32;
        out.0.push((c.0 / n, c.1 / n, c.2 / n));
        out.1.push(c.4 as f32 / n);
        out.2.push(c.3);
    }
    out
}

/// The evidence gate's binarisation: dark where a pixel is `EVIDENCE_BIAS` below the mean of a
/// square window of ~1/8 of the short side (clipped at the borders). Separable running sums: a
/// column sum per x updated by whole rows as the window slides down (vectorises), then per row
/// a prefix sum of the column sums, so each pixel costs a few adds and one compare (the
/// integral image it replaces had a dependency chain through every pixel: ~4× slower). Same
/// output bit for bit (`evidence_binarize_matches_the_integral_image`).
fn evidence_binarize(g: &GrayImage) -> GrayImage {
    mean_binarize(g, EVIDENCE_BIAS as u32, 0)
}

/// Dark where `(v + bias) × area < window sum + slack` over the square window of
/// [`evidence_binarize`]: its binarisation (`slack` 0), and `local_mean_threshold`'s
/// `v < ⌊mean⌋ − bias`, which is `(v + bias + 1) × area ≤ sum` (`slack` 1).
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn mean_binarize(g: &GrayImage, bias: u32, slack: u32) -> GrayImage {
    let r = (g.width().min(g.height()) as usize / 16).max(4);
    mean_binarize_radius(g, r, bias, slack)
}

/// [`mean_binarize`] with a window of radius `r` (a side of `2r + 1` px, clipped at the
/// borders): the QR region's threshold against a window of a few modules.
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn mean_binarize_radius(g: &GrayImage, r: usize, bias: u32, slack: u32) -> GrayImage {
    let (w, h) = (g.width() as usize, g.height() as usize);
    if w == 0 || h == 0 {
        return g.clone();
    }
    let r = r.max(1);
    // Window sums and their products with the bias stay below 2^24 (exact in f32) up to a
    // window of 251 px a side: every working image up to a short side of ~2000 px.
    let exact_in_f32 = (u64::from(bias) + 255) * ((2 * r + 1) as u64).pow(2) < 1 << 24;
    let src = g.as_raw();
    // Sums fit in u32: at most 255 × (2r + 1) rows × w columns per prefix, w ≤ a few thousand.
    let mut col = vec![0u32; w];
    let mut prefix = vec![0u32; w + 1];
    let mut out = vec![255u8; w * h];
    // Whether a whole window fits across the row; then each pixel's window width (clipped
    // at the borders) and its row's window sums.
    let wide = w > 2 * r + 1;
    let widths: Vec<u32> = (0..w)
        .map(|x| ((x + r + 1).min(w) - x.saturating_sub(r)) as u32)
        .collect();
    let widths_f32: Vec<f32> = widths.iter().map(|&v| v as f32).collect();
    let mut sums = vec![0u32; w];
    let (mut cy0, mut cy1) = (0usize, 0usize);
    for y in 0..h {
        let (y0, y1) = (y.saturating_sub(r), (y + r + 1).min(h));
        while cy1 < y1 {
            for (c, &p) in col.iter_mut().zip(&src[cy1 * w..][..w]) {
                *c += u32::from(p);
            }
            cy1 += 1;
        }
        while cy0 < y0 {
            for (c, &p) in col.iter_mut().zip(&src[cy0 * w..][..w]) {
                *c -= u32::from(p);
            }
            cy0 += 1;
        }
        let mut acc = 0u32;
        for (p, &c) in prefix[1..].iter_mut().zip(&col) {
            acc += c;
            *p = acc;
        }
        let rows = (y1 - y0) as u32;
        let (srow, orow) = (&src[y * w..][..w], &mut out[y * w..][..w]);
        if !wide {
            // Narrower than one window (a few px): every window is clipped on both sides.
            for (x, o) in orow.iter_mut().enumerate() {
                let (x0, x1) = (x.saturating_sub(r), (x + r + 1).min(w));
                if (u32::from(srow[x]) + bias) * rows * ((x1 - x0) as u32)
                    < prefix[x1] - prefix[x0] + slack
                {
                    *o = 0;
                }
            }
            continue;
        }
        // Each pixel's window sum, in three runs whose slices line up (the window clipped on
        // the left, whole, clipped on the right), so each loop vectorises.
        let (lo, hi) = (r, w - r - 1);
        for (s, &a) in sums[..lo].iter_mut().zip(&prefix[r + 1..]) {
            *s = a;
        }
        let (p1, p0) = (
            &prefix[lo + r + 1..][..hi - lo],
            &prefix[lo - r..][..hi - lo],
        );
        for ((s, &a), &b) in sums[lo..hi].iter_mut().zip(p1).zip(p0) {
            *s = a - b;
        }
        let total = prefix[w];
        for (s, &b) in sums[hi..].iter_mut().zip(&prefix[hi - r..]) {
            *s = total - b;
        }
        // Every pixel stored, no branch: the loop vectorises (the conditional store did not).
        let pixels = orow.iter_mut().zip(srow).zip(&sums);
        if exact_in_f32 {
            // The same comparison in f32, whose multiply the baseline x86-64 vector unit has
            // (its u32 multiply is emulated): every operand and product is an integer below
            // 2^24, so exact.
            let rows = rows as f32;
            for (((o, &v), &s), &wd) in pixels.zip(&widths_f32) {
                let lhs = (f32::from(v) + bias as f32) * rows * wd;
                *o = if lhs < (s + slack) as i32 as f32 {
                    0
                } else {
                    255
                };
            }
        } else {
            for (((o, &v), &s), &wd) in pixels.zip(&widths) {
                *o = if (u32::from(v) + bias) * rows * wd < s + slack {
                    0
                } else {
                    255
                };
            }
        }
    }
    GrayImage::from_raw(w as u32, h as u32, out).expect("buffer size matches")
}

/// Whether some three centres (x, y, module) could be a QR's finders (see [`find_triple`]).
#[cfg(test)]
fn three_finders(pts: &[(f32, f32, f32)]) -> bool {
    find_triple(pts, |_| true).is_some()
}

/// Of the triples [`find_triple`] accepts, the one whose centres were seen on the most rows
/// (a real finder gives a hit on every row through its centre block; a stray triple in text
/// or a textured header, a few), as indices (corner first).
fn best_triple(
    pts: &[(f32, f32, f32)],
    seen: &[u32],
    use_centre: impl Fn(usize) -> bool,
) -> Option<[usize; 3]> {
    let mut best: Option<(f32, [usize; 3])> = None;
    // Among the 32 most-seen centres (they come most-seen first): a finder is seen on every
    // row through its centre block, and the exhaustive search is cubic.
    let pts = &pts[..pts.len().min(32)];
    for_each_triple(pts, &use_centre, &mut |t| {
        let score = triple_score(pts, seen, t);
        if best.is_none_or(|b| score > b.0) {
            best = Some((score, t));
        }
        false
    });
    best.map(|b| b.1)
}

/// How well a triple of centres is supported: the rows its centres were seen on, weighed by
/// how well their module sizes agree (a QR's three finders have the same; a triple mixing a
/// finder with data modules scores lower).
fn triple_score(pts: &[(f32, f32, f32)], seen: &[u32], t: [usize; 3]) -> f32 {
    let ms = t.map(|i| pts[i].2);
    let agree =
        ms.iter().copied().fold(f32::MAX, f32::min) / ms.iter().copied().fold(f32::MIN, f32::max);
    t.iter().map(|&i| seen[i] as f32).sum::<f32>() * agree * agree
}

/// Three centres (x, y, module) that could be a QR's finders, as indices (corner first):
/// similar modules, and one of them the corner of two sides of about equal length (±40 %) at
/// about a right angle (±25°: perspective and shear), 14–180 modules long (versions 1–40).
/// Only centres `use_centre` accepts take part; the first triple found (centres come most-seen
/// first) is returned.
fn find_triple(pts: &[(f32, f32, f32)], use_centre: impl Fn(usize) -> bool) -> Option<[usize; 3]> {
    let mut found = None;
    for_each_triple(pts, &use_centre, &mut |t| {
        found = Some(t);
        true
    });
    found
}

/// Calls `visit` with every triple [`find_triple`] accepts until it returns true.
fn for_each_triple(
    pts: &[(f32, f32, f32)],
    use_centre: &dyn Fn(usize) -> bool,
    visit: &mut dyn FnMut([usize; 3]) -> bool,
) {
    let similar = |a: f32, b: f32| a.max(b) <= 1.8 * a.min(b);
    for (i, &(ax, ay, am)) in pts.iter().enumerate() {
        if !use_centre(i) {
            continue;
        }
        for (j, &(bx, by, bm)) in pts.iter().enumerate() {
            if j == i || !similar(am, bm) || !use_centre(j) {
                continue;
            }
            for (k, &(cx, cy, cm)) in pts.iter().enumerate().skip(j + 1) {
                if !use_centre(k) || !similar(am, cm) || !similar(bm, cm) || (cx, cy) == (ax, ay) {
                    continue;
                }
                let (ux, uy, vx, vy) = (bx - ax, by - ay, cx - ax, cy - ay);
                let (lu, lv) = ((ux * ux + uy * uy).sqrt(), (vx * vx + vy * vy).sqrt());
                let m = (am + bm + cm) / 3.0;
                if lu.min(lv) < 14.0 * m * 0.6 || lu.max(lv) > 180.0 * m * 1.4 {
                    continue;
                }
                if lu.max(lv) > 1.4 * lu.min(lv) {
                    continue;
                }
                let cos = (ux * vx + uy * vy) / (lu * lv);
                if cos.abs() <= 0.42 && visit([i, j, k]) {
                    return;
                }
            }
        }
    }
}

/// [`finder_evidence`] on the working image of `full`.
pub(crate) fn finder_evidence_full(full: &GrayImage) -> Evidence {
    finder_evidence(&fit(full, WORK_SIDE))
}

/// Whether five runs look like a finder pattern's 1:1:3:1:1 (loose: JPEG and 1–2 px modules).
fn finder_ratio(r: [usize; 5]) -> bool {
    let total: usize = r.iter().sum();
    if total < 7 {
        return false;
    }
    let m = total as f32 / 7.0;
    let tol = m * 0.7 + 1.0;
    let ok = |x: usize, k: f32| (x as f32 - k * m).abs() <= k * tol;
    ok(r[0], 1.0) && ok(r[1], 1.0) && ok(r[2], 3.0) && ok(r[3], 1.0) && ok(r[4], 1.0)
}

/// Report every row 1:1:3:1:1 candidate of at least `min_total` px in a binary image
/// (0 = dark, either polarity) that the column and the diagonal through its centre confirm at
/// a similar size, as (x, y, module size, whether the centre is light); at most
/// `EVIDENCE_MAX_HITS`.
fn finder_hits_in(bin: &GrayImage, min_total: usize, hit: &mut dyn FnMut(f32, f32, f32, bool)) {
    let w = bin.width() as usize;
    let px = bin.as_raw();
    let mut hits = 0;
    let mut runs: Vec<(usize, usize)> = Vec::with_capacity(w); // (start, length)
    for (y, row) in px.chunks_exact(w.max(1)).enumerate() {
        row_runs(row, &mut runs);
        for win in runs.windows(5) {
            let r = [win[0].1, win[1].1, win[2].1, win[3].1, win[4].1];
            let total: usize = r.iter().sum();
            if total < min_total || !finder_ratio(r) {
                continue;
            }
            let cx = win[2].0 + win[2].1 / 2;
            let similar = |r: Option<[usize; 5]>| {
                r.is_some_and(|r| {
                    let t: usize = r.iter().sum();
                    finder_ratio(r) && t * 2 >= total && t <= total * 2
                })
            };
            if similar(line_runs(bin, cx, y, (0, 1), total * 2))
                && similar(line_runs(bin, cx, y, (1, 1), total * 2))
            {
                hit(cx as f32, y as f32, total as f32 / 7.0, row[cx] != 0);
                hits += 1;
                if hits >= EVIDENCE_MAX_HITS {
                    return;
                }
            }
        }
    }
}

/// The runs of equal bytes in `row` as (start, length), in order. A binarised row is mostly
/// long runs: whole 8-byte words equal to the run's value are skipped at once (the byte loop
/// was a tenth of a failing read's time).
fn row_runs(row: &[u8], runs: &mut Vec<(usize, usize)>) {
    runs.clear();
    let n = row.len();
    let mut start = 0;
    while start < n {
        let pat = u64::from_le_bytes([row[start]; 8]);
        let mut x = start + 1;
        while let Some(word) = row.get(x..x + 8) {
            let diff = u64::from_le_bytes(word.try_into().expect("8 bytes")) ^ pat;
            if diff != 0 {
                // Little-endian: the lowest set bit is in the first byte that differs.
                x += (diff.trailing_zeros() / 8) as usize;
                break;
            }
            x += 8;
        }
        if x + 8 > n {
            while x < n && row[x] == row[start] {
                x += 1;
            }
        }
        runs.push((start, x - start));
        start = x;
    }
}

/// The five runs through (x, y) along the step (dx, dy) (a column: (0, 1); a diagonal:
/// (1, 1)), centred on the run holding (x, y): outer, gap, centre, gap, outer; `None` when
/// they run past the image or one run is longer than `max` pixels. The rings of a finder
/// pattern are concentric squares, so every line through the centre crosses them 1:1:3:1:1.
fn line_runs(
    bin: &GrayImage,
    x: usize,
    y: usize,
    step: (usize, usize),
    max: usize,
) -> Option<[usize; 5]> {
    let (w, h) = (bin.width() as usize, bin.height() as usize);
    if x >= w || y >= h {
        return None;
    }
    let px = bin.as_raw();
    let centre = y * w + x;
    let stride = step.1 * w + step.0;
    // How far the line may go each way before it leaves the image (a run ends there), found
    // once instead of checked at every step.
    let reach = |fwd: bool| {
        let along = |d: usize, back: usize, ahead: usize| match (d, fwd) {
            (0, _) => usize::MAX,
            (_, false) => back,
            (_, true) => ahead,
        };
        along(step.0, x, w - 1 - x).min(along(step.1, y, h - 1 - y))
    };
    let c = px[centre];
    let mut side = [[0usize; 3]; 2];
    for (fwd, runs) in [false, true].into_iter().zip(side.iter_mut()) {
        let room = reach(fwd);
        let mut t = usize::from(fwd);
        for (k, same) in [(0, true), (1, false), (2, true)] {
            while t <= room {
                let i = if fwd {
                    centre + t * stride
                } else {
                    centre - t * stride
                };
                if (px[i] == c) != same {
                    break;
                }
                runs[k] += 1;
                t += 1;
                if runs[k] > max {
                    return None;
                }
            }
            if runs[k] == 0 && !(k == 0 && fwd) {
                return None;
            }
        }
    }
    let [up, down] = side;
    Some([up[2], up[1], up[0] + down[0], down[1], down[2]])
}

/// One rxing pass over `g` within the budget (rqrr has its own passes, last).
fn scan(g: &GrayImage, budget: &mut Budget) -> Vec<String> {
    budget.pass(g, |g| scan_rxing(g, true)).unwrap_or_default()
}

fn scan_rxing(g: &GrayImage, try_harder: bool) -> Vec<String> {
    // What `rxing::helpers::detect_in_luma_slice_with_hints` does, with our binarizer: the
    // same black matrix as rxing's `HybridBinarizer`, a fraction of its cost (`hybrid`).
    let hints = DecodeHints {
        TryHarder: Some(try_harder),
        PossibleFormats: Some(std::collections::HashSet::from([BarcodeFormat::QR_CODE])),
        ..Default::default()
    };
    let Ok(source) = rxing::Luma8Source::new_with_slice(g.as_raw(), g.width(), g.height()) else {
        return Vec::new();
    };
    if g.width() == 0 || g.height() == 0 {
        return Vec::new();
    }
    // What `MultiFormatReader` does for QR codes: rxing's C++-port QR reader and, when that
    // reads nothing, its Java-port one on the same bits (on a failing pass both run). Kept
    // (issue 29 round four, `docs/benchmarks.md`): the Java port alone read a region pass
    // (seed 3230258786, `f-thermal-0021`) and a plain whole-image pass (seed 23429082,
    // `f-screen-0036`) that nothing after them read. Both are rxing's own code but for their
    // finder searches' row scans, which take runs from the matrix's words instead of pixels
    // (`cpp_port`, `java_port`: the same patterns and answers, a fraction of the time).
    let bitmap = rxing::BinaryBitmap::new(crate::hybrid::FastHybrid::new(source));
    let matrix = bitmap.get_black_matrix();
    crate::cpp_port::decode(matrix, &hints)
        .or_else(|| crate::java_port::decode(matrix, &hints))
        .into_iter()
        .collect()
}

/// rqrr: all decodable grids, deduplicated, largest first.
fn scan_rqrr(g: &GrayImage) -> Vec<String> {
    let (w, h) = (g.width() as usize, g.height() as usize);
    let black = rqrr_threshold(g);
    let mut prepared = rqrr::PreparedImage::prepare_from_bitmap(w, h, |x, y| black[y * w + x]);
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

/// rqrr's own binarisation (`PreparedImage::prepare`, quirc's): per row, running averages
/// `a = a·(s−1)/s + v` over `s = max(w/8, 1)` pixels from both ends (carried over from row
/// to row, the directions alternating), a pixel black when `v < (sum of both)·95 / (200·s)`;
/// the same bits (`rqrr_threshold_matches_rqrr`), with each division by the row's constant
/// done as a multiply by its reciprocal. rqrr divides twice a pixel in a dependent chain: its
/// preparation was most of an rqrr pass on a failing read.
fn rqrr_threshold(g: &GrayImage) -> Vec<bool> {
    let (w, h) = (g.width() as usize, g.height() as usize);
    let src = g.as_raw();
    let s = (w / 8).max(1) as u64;
    let (keep, t) = (Keep::of(s), 200 * s);
    let mut out = vec![false; w * h];
    let mut row_average = vec![0u64; w];
    let (mut avg_v, mut avg_u) = (0u64, 0u64);
    for (y, row) in src.chunks_exact(w.max(1)).take(h).enumerate() {
        row_average.fill(0);
        for x in 0..w {
            let (v, u) = if y % 2 == 0 {
                (w - 1 - x, x)
            } else {
                (x, w - 1 - x)
            };
            avg_v = keep.of_avg(avg_v) + u64::from(row[v]);
            avg_u = keep.of_avg(avg_u) + u64::from(row[u]);
            row_average[v] += avg_v;
            row_average[u] += avg_u;
        }
        // p < ⌊a·95 / t⌋ ⟺ p + 1 ≤ ⌊a·95 / t⌋ ⟺ (p + 1)·t ≤ a·95 (integers, t > 0).
        for ((o, &p), &a) in out[y * w..][..w].iter_mut().zip(row).zip(&row_average) {
            *o = (u64::from(p) + 1) * t <= a * 95;
        }
    }
    out
}

/// rqrr's running-average step `⌊a·(s−1) / s⌋` as the high half of `a × m`, `m = ⌊2^64·(s−1)
/// / s⌋ + 1`: one multiply in the chain instead of two. Exact for `a < 2^32`: the product
/// over-shoots `a·(s−1)/s` by less than `a / 2^64 < 1/s`, and the fraction of `a·(s−1)/s` is a
/// multiple of `1/s` at most `(s−1)/s`, so the floor does not change; larger `a` (never in a
/// read: the averages stay under 255·s) are divided.
#[derive(Clone, Copy)]
struct Keep {
    s: u64,
    m: u64,
    by_s: Divide,
}

impl Keep {
    fn of(s: u64) -> Keep {
        let s = s.max(1);
        Keep {
            s,
            m: ((u128::from(s - 1) << 64) / u128::from(s) + 1) as u64,
            by_s: Divide::by(s),
        }
    }

    #[inline(always)]
    fn of_avg(self, a: u64) -> u64 {
        if a < 1 << 32 {
            ((u128::from(a) * u128::from(self.m)) >> 64) as u64
        } else {
            self.by_s.div(a * (self.s - 1))
        }
    }
}

/// Division of `u64`s by a fixed divisor: `⌊n / d⌋` as the high half of `n × ⌈2^64 / d⌉`,
/// exact for every `n < 2^32` (the error `n·(m·d − 2^64) / 2^64` stays below one `d`th);
/// larger `n` are divided. For `d ≥ 2` the factor fits 64 bits, so the product is one
/// 64 × 64-bit multiply (rqrr's running averages are a chain of these); `d = 1` is `n`.
#[derive(Clone, Copy)]
struct Divide {
    d: u64,
    m: u64,
}

impl Divide {
    fn by(d: u64) -> Divide {
        let d = d.max(1);
        Divide {
            d,
            // ⌈2^64 / d⌉ (as `⌊2^64 / d⌋ + 1`) ≤ 2^63 + 1 for d ≥ 2; unused for d = 1.
            m: if d == 1 {
                0
            } else {
                ((1u128 << 64) / u128::from(d) + 1) as u64
            },
        }
    }

    #[inline(always)]
    fn div(self, n: u64) -> u64 {
        if self.d == 1 {
            n
        } else if n < 1 << 32 {
            ((u128::from(n) * u128::from(self.m)) >> 64) as u64
        } else {
            n / self.d
        }
    }
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
#[multiversion::multiversion(targets("x86_64+avx2"))]
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
        // The common case (cheap first pass, photo fit) without the generic accumulator: the
        // two rows summed column by column, then neighbouring columns, each a plain indexed
        // loop over slices of one length, which vectorises (pairs of byte chunks did not).
        let ow = w as usize;
        let mut cols = vec![0u16; 2 * ow];
        for (oy, orow) in out.chunks_exact_mut(ow).enumerate() {
            let r0 = &src[2 * oy * sw..][..2 * ow];
            let r1 = &src[(2 * oy + 1) * sw..][..2 * ow];
            for x in 0..2 * ow {
                cols[x] = u16::from(r0[x]) + u16::from(r1[x]);
            }
            for x in 0..ow {
                orow[x] = ((cols[2 * x] + cols[2 * x + 1]) / 4) as u8;
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

/// Separable square min (`max == false`) or max filter of radius `r`: each pass combines whole
/// rows element by element (vectorises), `2r` row operations per pass.
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn rank_filter(g: &GrayImage, r: u32, max: bool) -> GrayImage {
    let (w, h) = (g.width() as usize, g.height() as usize);
    let r = r as usize;
    let pick = |a: u8, b: u8| if max { a.max(b) } else { a.min(b) };
    let combine = |dst: &mut [u8], src: &[u8]| {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = pick(*d, s);
        }
    };
    let src = g.as_raw();
    // Horizontal: out[x] = pick over src[x-r..=x+r] (clamped), built from shifted copies.
    let mut tmp = src.clone();
    for y in 0..h {
        let row = &src[y * w..][..w];
        let dst = &mut tmp[y * w..][..w];
        for d in 1..=r.min(w.saturating_sub(1)) {
            combine(&mut dst[..w - d], &row[d..]);
            combine(&mut dst[d..], &row[..w - d]);
        }
    }
    // Vertical: the same with whole rows.
    let mut out = tmp.clone();
    for y in 0..h {
        let (y0, y1) = (y.saturating_sub(r), (y + r + 1).min(h));
        let (head, tail) = out.split_at_mut(y * w);
        let _ = head;
        let dst = &mut tail[..w];
        for yy in y0..y1 {
            if yy != y {
                combine(dst, &tmp[yy * w..][..w]);
            }
        }
    }
    GrayImage::from_raw(w as u32, h as u32, out).expect("buffer size matches")
}

/// Lanczos-3 upscale by an integer factor `f`: on 1.2–2 px/module thumbnails its sharper
/// kernel restores module edges that bilinear and even Catmull-Rom leave too soft for the
/// finder-pattern runs (measured in `docs/benchmarks.md`); the decoders binarise afterwards.
/// Separable, with the `f` phases' weights computed once, in fixed point (weights in 1/4096,
/// the horizontal pass kept at 1/64 of a level in `i16`) and every inner loop running over a
/// whole row, so both passes vectorise: ~5× faster than the `f32` version it replaces, within
/// one level of it (`lanczos_fixed_point_matches_float`).
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn upscale_lanczos(g: &GrayImage, f: u32) -> GrayImage {
    const A: isize = 3;
    let (w, h, f) = (g.width() as usize, g.height() as usize, f.max(1) as usize);
    if w == 0 || h == 0 {
        return g.clone();
    }
    let phases = lanczos_phases(f);
    let clamp = |i: isize, n: usize| i.clamp(0, n as isize - 1) as usize;
    let pad = A as usize + 1;
    let (ow, oh) = (w * f, h * f);
    let src = g.as_raw();
    // Horizontal: each source row, padded by clamped pixels, → `ow` values at 64× scale.
    let mut tmp = vec![0i16; ow * h];
    let mut padded = vec![0i32; w + 2 * pad];
    let mut acc = vec![0i32; w.max(ow)];
    for y in 0..h {
        let row = &src[y * w..][..w];
        for (j, p) in padded.iter_mut().enumerate() {
            *p = i32::from(row[clamp(j as isize - pad as isize, w)]);
        }
        let out = &mut tmp[y * ow..][..ow];
        for (p, (base, k)) in phases.iter().enumerate() {
            // Taps for output i·f + p start at padded index i + base - A + 1 + pad.
            let start = (base - A + 1 + pad as isize) as usize;
            let acc = &mut acc[..w];
            acc.fill(0);
            for (j, &kj) in k.iter().enumerate() {
                for (a, &v) in acc.iter_mut().zip(&padded[start + j..][..w]) {
                    *a += kj * v;
                }
            }
            for (o, &a) in out.iter_mut().skip(p).step_by(f).zip(acc.iter()) {
                *o = ((a + 32) >> 6) as i16;
            }
        }
    }
    // Vertical: whole rows of `tmp`, back to levels (1/4096 × 1/64).
    let mut out = vec![0u8; ow * oh];
    let acc = &mut acc[..ow];
    for i in 0..h {
        for (p, (base, k)) in phases.iter().enumerate() {
            acc.fill(1 << 17);
            for (j, &kj) in k.iter().enumerate() {
                let r = clamp(i as isize + base - A + 1 + j as isize, h);
                for (a, &v) in acc.iter_mut().zip(&tmp[r * ow..][..ow]) {
                    *a += kj * i32::from(v);
                }
            }
            let dst = &mut out[(i * f + p) * ow..][..ow];
            for (d, &v) in dst.iter_mut().zip(acc.iter()) {
                *d = (v >> 18).clamp(0, 255) as u8;
            }
        }
    }
    GrayImage::from_raw(ow as u32, oh as u32, out).expect("buffer size matches")
}

/// Lanczos-3 weights of the `f` phases of an integer upscale: output pixel `o = i·f + p` samples
/// the source at `i + (p + 0.5)/f - 0.5`, with 6 taps from `i + base(p) - 2`; weights in 1/4096
/// summing to exactly 4096 (flat areas keep their level).
fn lanczos_phases(f: usize) -> Vec<(isize, [i32; 6])> {
    const A: f32 = 3.0;
    let sinc = |x: f32| {
        if x.abs() < 1e-6 {
            1.0
        } else {
            let px = std::f32::consts::PI * x;
            px.sin() / px
        }
    };
    let kernel = |x: f32| {
        if x.abs() < A {
            sinc(x) * sinc(x / A)
        } else {
            0.0
        }
    };
    (0..f)
        .map(|p| {
            let pos = (p as f32 + 0.5) / f as f32 - 0.5;
            let base = pos.floor();
            let t = pos - base;
            let k: [f32; 6] = std::array::from_fn(|j| kernel(t - (j as f32 - A + 1.0)));
            let sum: f32 = k.iter().sum();
            let mut q: [i32; 6] = k.map(|v| (v / sum * 4096.0).round() as i32);
            // Rounding may leave the sum off by one or two: put it on the largest tap.
            let big = (0..6).max_by_key(|&j| q[j]).unwrap_or(0);
            q[big] += 4096 - q.iter().sum::<i32>();
            (base as isize, q)
        })
        .collect()
}

/// 3×3 box blur (separable, edges clamped), rounded: `(sum + 4) / 9`. Each pass over whole
/// rows of slices, so it vectorises (the per-pixel clamped indices did not: the de-moiré look
/// blurs the whole working image twice). The same output as [`box_blur3_reference`].
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn box_blur3(g: &GrayImage) -> GrayImage {
    let (w, h) = (g.width() as usize, g.height() as usize);
    if w == 0 || h == 0 {
        return g.clone();
    }
    let src = g.as_raw();
    let mut tmp = vec![0u16; w * h];
    for (row, t) in src.chunks_exact(w).zip(tmp.chunks_exact_mut(w)) {
        let edge = |x: usize| {
            u16::from(row[x.saturating_sub(1)])
                + u16::from(row[x])
                + u16::from(row[(x + 1).min(w - 1)])
        };
        t[0] = edge(0);
        t[w - 1] = edge(w - 1);
        if w >= 3 {
            for (((t, &a), &b), &c) in t[1..w - 1]
                .iter_mut()
                .zip(&row[..w - 2])
                .zip(&row[1..w - 1])
                .zip(&row[2..])
            {
                *t = u16::from(a) + u16::from(b) + u16::from(c);
            }
        }
    }
    let mut out = vec![0u8; w * h];
    for (y, o) in out.chunks_exact_mut(w).enumerate() {
        let (up, down) = (y.saturating_sub(1), (y + 1).min(h - 1));
        let (a, b, c) = (
            &tmp[up * w..][..w],
            &tmp[y * w..][..w],
            &tmp[down * w..][..w],
        );
        for (((o, &a), &b), &c) in o.iter_mut().zip(a).zip(b).zip(c) {
            *o = ((a + b + c + 4) / 9) as u8;
        }
    }
    GrayImage::from_raw(w as u32, h as u32, out).expect("buffer size matches")
}

/// The 3×3 box blur pixel by pixel, as it was: what [`box_blur3`] must equal.
#[cfg(test)]
fn box_blur3_reference(g: &GrayImage) -> GrayImage {
    let (w, h) = (g.width() as usize, g.height() as usize);
    let src = g.as_raw();
    let mut tmp = vec![0u16; w * h];
    for y in 0..h {
        let row = &src[y * w..][..w];
        for x in 0..w {
            let (a, c) = (row[x.saturating_sub(1)], row[(x + 1).min(w - 1)]);
            tmp[y * w + x] = u16::from(a) + u16::from(row[x]) + u16::from(c);
        }
    }
    let mut out = vec![0u8; w * h];
    for y in 0..h {
        let (up, down) = (y.saturating_sub(1), (y + 1).min(h - 1));
        for x in 0..w {
            let s = tmp[up * w + x] + tmp[y * w + x] + tmp[down * w + x];
            out[y * w + x] = ((s + 4) / 9) as u8;
        }
    }
    GrayImage::from_raw(w as u32, h as u32, out).expect("buffer size matches")
}

#[cfg(test)]
fn resize(g: &GrayImage, f: u32, filter: FilterType) -> GrayImage {
    image::imageops::resize(g, g.width() * f, g.height() * f, filter)
}

/// `image::imageops::resize` to twice the size with `FilterType::Triangle`, bit for bit
/// (`upscale_bilinear2_matches_image_resize`), in integers. At ×2 that filter weighs the two
/// nearest source pixels ¼ and ¾ along each axis (one pixel, weight 1, at the borders), and
/// every sum `image` forms in f32 is a multiple of 1/16 below 256, so exact: each output is
/// `round(n / 16)` of an integer `n`, rounded half up like `image`'s `round()`. `image`
/// converts every pixel to four f32 channels and back (~250 ms for a 0.6 Mpx page, most of a
/// failing read's time); this costs a few ms.
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn upscale_bilinear2(g: &GrayImage) -> GrayImage {
    let (w, h) = (g.width() as usize, g.height() as usize);
    if w == 0 || h == 0 {
        return GrayImage::new(2 * w as u32, 2 * h as u32);
    }
    let src = g.as_raw();
    let (ow, oh) = (2 * w, 2 * h);
    let mut out = vec![0u8; ow * oh];
    // Each output row's vertical blend per source column, then the even and odd outputs.
    let mut col = vec![0u16; w];
    let (mut even, mut odd) = (vec![0u16; w], vec![0u16; w]);
    for (oy, orow) in out.chunks_exact_mut(ow).enumerate() {
        let k = oy / 2;
        let (a, b) = if oy % 2 == 0 {
            (k.saturating_sub(1), k)
        } else {
            (k, (k + 1).min(h - 1))
        };
        // Vertical: in quarters, the nearer row weighed 3.
        let (near, far) = if oy % 2 == 0 { (b, a) } else { (a, b) };
        let (rn, rf) = (&src[near * w..][..w], &src[far * w..][..w]);
        for ((c, &n), &f) in col.iter_mut().zip(rn).zip(rf) {
            *c = 3 * u16::from(n) + u16::from(f);
        }
        // Horizontal: in sixteenths, then rounded; output 2j weighs column j−1 (clamped) and
        // 2j+1 column j+1, each a loop over shifted slices so it vectorises (at most 4,080:
        // u16 is exact).
        even[0] = 4 * col[0];
        odd[w - 1] = 4 * col[w - 1];
        for ((e, &c), &l) in even[1..].iter_mut().zip(&col[1..]).zip(&col[..w - 1]) {
            *e = 3 * c + l;
        }
        for ((o, &c), &r) in odd[..w - 1].iter_mut().zip(&col[..w - 1]).zip(&col[1..]) {
            *o = 3 * c + r;
        }
        for ((pair, &e), &o) in orow.chunks_exact_mut(2).zip(&even).zip(&odd) {
            pair[0] = ((e + 8) >> 4) as u8;
            pair[1] = ((o + 8) >> 4) as u8;
        }
    }
    GrayImage::from_raw(ow as u32, oh as u32, out).expect("buffer size matches")
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
    mean_binarize(g, bias.max(0) as u32 + 1, 1)
}

/// The integral-image version `local_mean_threshold` replaced (a test compares them).
#[cfg(test)]
fn local_mean_threshold_reference(g: &GrayImage, bias: i32) -> GrayImage {
    let r = (g.width().min(g.height()) as usize / 16).max(4);
    local_mean_threshold_reference_radius(g, bias, r)
}

/// [`local_mean_threshold_reference`] with a window of radius `r`.
#[cfg(test)]
fn local_mean_threshold_reference_radius(g: &GrayImage, bias: i32, r: usize) -> GrayImage {
    let (w, h) = (g.width() as usize, g.height() as usize);
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
    fn stats_count_every_pixel_once_whatever_the_length() {
        // The four-lane histogram against one plain count: lengths around the lane width,
        // a flat image (one level in every lane) and one past a 2^24-pixel block.
        let naive = |g: &GrayImage| {
            let mut hist = [0u64; 256];
            g.iter().for_each(|&p| hist[usize::from(p)] += 1);
            let (n, sum) = (g.len() as u64, g.iter().map(|&p| u64::from(p)).sum::<u64>());
            let level = |frac: u64| {
                let mut seen = 0;
                (0..=255u8)
                    .find(|&v| {
                        seen += hist[usize::from(v)];
                        seen > n * frac / 100
                    })
                    .unwrap_or(255)
            };
            (sum.checked_div(n).unwrap_or(255), level(2), level(98))
        };
        let mut images: Vec<GrayImage> = (1..=9u32)
            .map(|w| GrayImage::from_fn(w, 3, |x, y| image::Luma([(x * 97 + y * 31) as u8])))
            .collect();
        images.push(GrayImage::from_pixel(1001, 7, image::Luma([255])));
        images.push(GrayImage::from_fn(4099, 4097, |x, y| {
            image::Luma([((x ^ y) % 7 * 40) as u8])
        }));
        for g in &images {
            let s = Stats::of(g);
            assert_eq!((s.mean, s.lo, s.hi), naive(g), "{:?}", g.dimensions());
        }
    }

    #[test]
    fn crop_copies_the_rectangle_clipped_to_the_image() {
        let g = GrayImage::from_fn(7, 5, |x, y| image::Luma([(10 * y + x) as u8]));
        for (x0, y0, cw, ch) in [
            (0, 0, 7, 5),
            (2, 1, 3, 2),
            (5, 3, 9, 9),
            (7, 5, 1, 1),
            (0, 4, 7, 1),
        ] {
            let ours = crop(&g, x0, y0, cw, ch);
            let theirs = image::imageops::crop_imm(&g, x0, y0, cw, ch).to_image();
            assert_eq!(ours, theirs, "{x0},{y0} {cw}×{ch}");
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

    fn unlimited() -> Limits {
        Limits {
            scan_time: Duration::MAX,
            scan_passes: u32::MAX,
            ..Limits::default()
        }
    }

    /// A slip QR drawn at `module` px per module (area-averaged from 8 px), on a white page
    /// `page` times the QR's size, QR in the lower right like a real slip.
    fn thumbnail(payload: &str, module: f32, page: f32) -> GrayImage {
        let code =
            qrcode::QrCode::with_error_correction_level(payload.as_bytes(), qrcode::EcLevel::M)
                .unwrap();
        let n = code.width() as u32;
        let side = (n + 8) * 8;
        let big_side = (side as f32 * page) as u32;
        let mut big = GrayImage::from_pixel(big_side, big_side, image::Luma([255]));
        let off = big_side - side - 16;
        for (i, c) in code.to_colors().iter().enumerate() {
            if *c == qrcode::Color::Dark {
                let (mx, my) = (i as u32 % n + 4, i as u32 / n + 4);
                for y in 0..8 {
                    for x in 0..8 {
                        big.put_pixel(off + mx * 8 + x, off + my * 8 + y, image::Luma([0]));
                    }
                }
            }
        }
        // Grey bars for the slip's text above the QR.
        for row in 0..6 {
            for y in (40 + row * 60..60 + row * 60).filter(|&y| y + 8 < off) {
                for x in 40..big_side - 40 - row * 30 {
                    big.put_pixel(x, y, image::Luma([90]));
                }
            }
        }
        let out = (big_side as f32 * module / 8.0).round() as u32;
        image::imageops::resize(&big, out, out, FilterType::Triangle)
    }

    fn slip_payload() -> String {
        slip_qr::encode_bank_slip("006", "KTB2611231234567890ABCD")
    }

    /// A page with a QR's three finder patterns (and timing-free random modules) that is not a
    /// valid code: it passes the evidence gate, so every strategy runs and fails.
    /// Three finder patterns, the timing patterns between them, random modules elsewhere: a
    /// QR-like image that does not decode.
    fn finders_only() -> GrayImage {
        finders_and_random(true)
    }

    fn finders_and_random(timing: bool) -> GrayImage {
        let (n, u, off) = (29u32, 6u32, 40u32);
        let mut g = GrayImage::from_pixel(300, 400, image::Luma([235]));
        let mut seed = 0x2545_f491u32;
        let finder = |mx: u32, my: u32| -> Option<bool> {
            for (fx, fy) in [(0, 0), (n - 7, 0), (0, n - 7)] {
                if (fx..fx + 8).contains(&mx) && (fy..fy + 8).contains(&my) {
                    let (dx, dy) = (mx.abs_diff(fx + 3), my.abs_diff(fy + 3));
                    let d = dx.max(dy);
                    return Some(d <= 1 || d == 3);
                }
            }
            None
        };
        for my in 0..n {
            for mx in 0..n {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                let on_timing = timing && (mx == 6 || my == 6);
                let dark = finder(mx, my).unwrap_or(if on_timing {
                    (mx + my) % 2 == 0
                } else {
                    seed % 2 == 0
                });
                if dark {
                    for y in 0..u {
                        for x in 0..u {
                            g.put_pixel(off + mx * u + x, off + my * u + y, image::Luma([20]));
                        }
                    }
                }
            }
        }
        g
    }

    /// A page of random squares (QR-like texture, no finder pattern).
    fn checker_only() -> GrayImage {
        let mut g = GrayImage::from_pixel(300, 400, image::Luma([235]));
        let mut seed = 0x9e37_79b9u32;
        for cy in 0..30 {
            for cx in 0..30 {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                if seed % 2 == 0 {
                    for y in 0..6 {
                        for x in 0..6 {
                            g.put_pixel(60 + cx * 6 + x, 100 + cy * 6 + y, image::Luma([20]));
                        }
                    }
                }
            }
        }
        g
    }

    #[test]
    fn evidence_gate_sees_finders_not_texture() {
        assert!(finder_evidence(&finders_only()).qr_like);
        let payload = slip_payload();
        assert!(finder_evidence(&thumbnail(&payload, 1.2, 4.0)).qr_like);
        assert!(finder_evidence(&thumbnail(&payload, 4.0, 2.0)).qr_like);
        assert!(!finder_evidence(&checker_only()).qr_like);
        assert!(!finder_evidence(&GrayImage::from_pixel(300, 400, image::Luma([230]))).qr_like);
        // Degenerate sizes do not panic.
        for (w, h) in [(0, 0), (1, 1), (7, 1), (1, 7), (3000, 1)] {
            let _ = finder_evidence(&GrayImage::new(w, h));
        }
    }

    /// The integral-image binarisation `evidence_binarize` replaced, as the reference.
    fn evidence_binarize_reference(g: &GrayImage) -> GrayImage {
        let (w, h) = (g.width() as usize, g.height() as usize);
        let r = (w.min(h) / 16).max(4);
        let src = g.as_raw();
        let mut integ = vec![0u64; (w + 1) * (h + 1)];
        for y in 0..h {
            let mut row = 0u64;
            for x in 0..w {
                row += u64::from(src[y * w + x]);
                integ[(y + 1) * (w + 1) + x + 1] = integ[y * (w + 1) + x + 1] + row;
            }
        }
        GrayImage::from_fn(w as u32, h as u32, |x, y| {
            let (x, y) = (x as usize, y as usize);
            let (x0, x1) = (x.saturating_sub(r), (x + r + 1).min(w));
            let (y0, y1) = (y.saturating_sub(r), (y + r + 1).min(h));
            let s = integ[y1 * (w + 1) + x1] + integ[y0 * (w + 1) + x0]
                - integ[y0 * (w + 1) + x1]
                - integ[y1 * (w + 1) + x0];
            let area = ((x1 - x0) * (y1 - y0)) as u64;
            let dark = (u64::from(src[y * w + x]) + EVIDENCE_BIAS as u64) * area < s;
            image::Luma([if dark { 0 } else { 255 }])
        })
    }

    #[test]
    fn row_runs_match_a_byte_by_byte_scan() {
        let mut seed = 0x9e37_79b9u32;
        for n in [0usize, 1, 7, 8, 9, 15, 16, 17, 63, 200] {
            for run_max in [1u32, 3, 9, 40] {
                let mut row = Vec::with_capacity(n);
                while row.len() < n {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    let v = if seed & 1 == 0 { 0 } else { 255 };
                    let len = 1 + (seed >> 8) % run_max;
                    row.extend(std::iter::repeat_n(v, len as usize));
                }
                row.truncate(n);
                let mut naive = Vec::new();
                let mut start = 0;
                for x in 1..=n {
                    if x == n || row[x] != row[start] {
                        naive.push((start, x - start));
                        start = x;
                    }
                }
                let mut runs = Vec::new();
                row_runs(&row, &mut runs);
                assert_eq!(runs, naive, "n={n} run_max={run_max} row={row:?}");
            }
        }
    }

    #[test]
    fn evidence_binarize_matches_the_integral_image() {
        let mut seed = 0x1234_5678u32;
        // Up to a window too big for exact f32 sums (short side 2048: the u32 comparison).
        for (w, h) in [
            (1, 1),
            (9, 3),
            (10, 40),
            (40, 23),
            (97, 131),
            (300, 90),
            (2100, 2048),
        ] {
            let g = GrayImage::from_fn(w, h, |x, y| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                let texture = (x / 5 + y / 7) % 2 * 120;
                image::Luma([(texture + seed % 100 + y % 30) as u8])
            });
            assert_eq!(
                evidence_binarize(&g),
                evidence_binarize_reference(&g),
                "{w}x{h}"
            );
        }
        let t = thumbnail(&slip_payload(), 2.0, 3.0);
        assert_eq!(evidence_binarize(&t), evidence_binarize_reference(&t));
        assert_eq!(
            evidence_binarize(&GrayImage::new(0, 5)).dimensions(),
            (0, 5)
        );
    }

    /// `g` with every level mapped through `f` (re-colouring generated images).
    fn map(g: &GrayImage, f: impl Fn(u8) -> u8) -> GrayImage {
        GrayImage::from_fn(g.width(), g.height(), |x, y| {
            image::Luma([f(g.get_pixel(x, y).0[0])])
        })
    }

    #[test]
    fn evidence_tells_the_polarity_of_the_finders() {
        let e = finder_evidence(&finders_only());
        assert!(e.qr_like && !e.light, "{e:?}");
        let f = e.finders.expect("a triple");
        // The corner finder of `finders_only` is at module (3.5, 3.5), 6 px modules, from 40.
        assert!(
            (f[0].0 - 61.0).abs() < 4.0 && (f[0].1 - 61.0).abs() < 4.0,
            "{f:?}"
        );
        let e = finder_evidence(&invert(&finders_only()));
        assert!(e.qr_like && e.light, "{e:?}");
    }

    #[test]
    fn qr_region_is_the_code_plus_ten_modules() {
        let g = GrayImage::new(1000, 1000);
        let f = [
            (500.0, 500.0, 4.0),
            (600.0, 500.0, 4.0),
            (500.0, 600.0, 4.0),
        ];
        let (crop, m) = qr_region(&g, &f).expect("a small region");
        assert_eq!((crop.dimensions(), m), ((180, 180), 4.0));
        // Clipped at the border.
        let f = [(10.0, 10.0, 4.0), (110.0, 10.0, 4.0), (10.0, 110.0, 4.0)];
        assert_eq!(qr_region(&g, &f).unwrap().0.dimensions(), (150, 150));
        // Most of the image: no crop.
        let f = [
            (100.0, 100.0, 4.0),
            (900.0, 100.0, 4.0),
            (100.0, 900.0, 4.0),
        ];
        assert!(qr_region(&g, &f).is_none());
    }

    #[test]
    fn a_dim_dark_mode_code_is_read_after_a_global_threshold() {
        // Light modules at ~115 on a ~40 card: the decoders' own binarisers miss it, inverted
        // or not; the gate sees light-centred finders, the image is low-contrast, and Otsu on
        // the inverted QR region reads it.
        let payload = slip_payload();
        let g = map(&thumbnail(&payload, 4.0, 2.0), |v| {
            118 - (u16::from(v) * 78 / 255) as u8
        });
        let stats = Stats::of(&g);
        assert!(
            stats.dark() && stats.low_contrast(),
            "{} {} {}",
            stats.mean,
            stats.lo,
            stats.hi
        );
        let e = finder_evidence(&g);
        assert!(e.qr_like && e.light, "{e:?}");
        let (found, how) = run_named(&g, &mut Budget::new(&unlimited()));
        assert_eq!(found, vec![payload]);
        assert!(["dark", "crop+otsu"].contains(&how), "{how}");
    }

    #[test]
    fn the_qr_region_of_a_speckled_print_is_closed_and_read() {
        // A 6 px/module code whose dark modules miss 2×2 dots in a regular pattern, in the
        // lower right of a page with text bars: the plain pass misses it, a closing of the
        // QR region reads it.
        let payload = slip_payload();
        let mut g = thumbnail(&payload, 6.0, 2.5);
        let (w, h) = g.dimensions();
        // A third of the 2×2 printer dots missing, at random (seeded).
        let holes: Vec<bool> = (0..(w / 2 + 1) * (h / 2 + 1))
            .scan(0x2545_f491u32, |s, _| {
                *s ^= *s << 13;
                *s ^= *s >> 17;
                *s ^= *s << 5;
                Some(*s % 3 == 0)
            })
            .collect();
        // Where the code's modules are (as `thumbnail` draws them at 8 px, then scales): the
        // finders are left whole, so the gate finds this code's triple.
        let n = qrcode::QrCode::with_error_correction_level(payload.as_bytes(), qrcode::EcLevel::M)
            .unwrap()
            .width() as i32;
        let big_side = ((n as u32 + 8) * 8) as f32 * 2.5;
        let off = big_side as i32 - (n + 8) * 8 - 16;
        let module_at = |x: u32, y: u32| {
            let at = |v: u32| ((v as f32 * 8.0 / 6.0) as i32 - off).div_euclid(8) - 4;
            (at(x), at(y))
        };
        for y in 0..h {
            for x in 0..w {
                let (mx, my) = module_at(x, y);
                let finder = (mx < 8 || mx >= n - 8) && (my < 8 || (mx < 8 && my >= n - 8));
                if g.get_pixel(x, y).0[0] < 128
                    && !finder
                    && holes[((y / 2) * (w / 2 + 1) + x / 2) as usize]
                {
                    g.put_pixel(x, y, image::Luma([235]));
                }
            }
        }
        let e = finder_evidence(&g);
        let f = e.finders.expect("finders");
        let (crop, m) = qr_region(&g, &f).expect("a region");
        assert!((4.5..7.5).contains(&m), "{m} {f:?}");
        assert!(crop.width() * crop.height() * 2 <= w * h);
        assert!(
            scan_rxing(&g, true).is_empty(),
            "the plain pass reads it: not a test"
        );
        assert_eq!(
            scan_rxing(&close_dark(&crop, 2), true),
            vec![payload.clone()]
        );
        let (found, how) = run_named(&g, &mut Budget::new(&unlimited()));
        assert_eq!(found, vec![payload]);
        assert_eq!(how, "crop+close");
    }

    #[test]
    fn the_budget_sees_an_upscale_before_it_is_prepared() {
        let thumb = GrayImage::new(300, 450);
        assert_eq!(prepared_scale("lanczos", &thumb), 9);
        assert_eq!(prepared_scale("lanczos", &GrayImage::new(500, 800)), 4);
        assert_eq!(prepared_scale("lanczos", &GrayImage::new(900, 1200)), 1);
        assert_eq!(prepared_scale("close", &thumb), 1);
    }

    #[test]
    fn three_finders_needs_a_right_angle_and_similar_modules() {
        let l = [(0.0, 0.0, 4.0), (100.0, 0.0, 4.0), (0.0, 100.0, 4.0)];
        assert!(three_finders(&l));
        // In a line: no.
        assert!(!three_finders(&[
            (0.0, 0.0, 4.0),
            (100.0, 0.0, 4.0),
            (200.0, 0.0, 4.0)
        ]));
        // Modules far apart in size: no.
        assert!(!three_finders(&[
            (0.0, 0.0, 4.0),
            (100.0, 0.0, 12.0),
            (0.0, 100.0, 4.0)
        ]));
        // Too close for a QR of that module size (under 14 modules): no.
        assert!(!three_finders(&[
            (0.0, 0.0, 10.0),
            (30.0, 0.0, 10.0),
            (0.0, 30.0, 10.0)
        ]));
    }

    #[test]
    fn no_qr_without_finders_stops_after_the_free_passes() {
        // Unlimited budget: only the missing evidence stops the search.
        for g in [
            GrayImage::from_pixel(300, 400, image::Luma([230])),
            checker_only(),
            GrayImage::from_pixel(900, 1200, image::Luma([40])),
        ] {
            let mut b = Budget::new(&unlimited());
            assert_eq!(run_named(&g, &mut b), (Vec::new(), "no-finder"));
            assert!(b.used() <= FREE_PASSES + 1, "{} passes", b.used());
            // Big images: the gate runs before the plain pass, so only the half pass is spent.
            if g.width().min(g.height()) >= CHEAP_HALF_MIN_SIDE {
                assert_eq!(b.used(), 1, "{}x{}", g.width(), g.height());
            }
        }
        // With finder patterns, every strategy is tried.
        let mut b = Budget::new(&unlimited());
        assert!(run_named(&finders_only(), &mut b).0.is_empty());
        assert!(b.used() >= 8, "{} passes", b.used());
    }

    /// Another triple's region spanning far more modules than a slip's code is left to the
    /// exhaustive scan; the chosen triple's is tried however big.
    #[test]
    fn other_triples_big_regions_are_left_to_the_exhaustive_scan() {
        let base = GrayImage::from_pixel(1000, 1000, image::Luma([255]));
        // 25 modules a side at 4 px (a slip's code), and 200 at 2 px (48,400 modules²).
        let small: Triple = [
            (100.0, 100.0, 4.0),
            (200.0, 100.0, 4.0),
            (100.0, 200.0, 4.0),
        ];
        let big: Triple = [
            (300.0, 300.0, 2.0),
            (700.0, 300.0, 2.0),
            (300.0, 700.0, 2.0),
        ];
        assert!(slip_sized(&small) && region_modules2(&big) > REGION_MAX_MODULES2);
        let evidence = |chosen: Triple, other: Option<Triple>| Evidence {
            hits: 0,
            centres: 0,
            qr_like: true,
            light: false,
            finders: Some(chosen),
            coarse: false,
            timing: true,
            others: [other, None],
            finders_timing: true,
            alt: None,
        };
        for exhaustive in [false, true] {
            let limits = Limits {
                scan_exhaustive: exhaustive,
                ..Limits::default()
            };
            let mut tried = Vec::new();
            let e = evidence(small, Some(big));
            let found = try_region(
                &base,
                &e,
                false,
                &mut Budget::new(&limits),
                true,
                &mut tried,
            );
            assert!(found.is_none());
            assert_eq!(tried.contains(&big), exhaustive, "exhaustive: {exhaustive}");
            assert!(tried.contains(&small));
            let mut tried = Vec::new();
            let e = evidence(big, None);
            try_region(
                &base,
                &e,
                false,
                &mut Budget::new(&limits),
                true,
                &mut tried,
            );
            assert_eq!(tried, vec![big]);
        }
    }

    #[test]
    fn finders_without_timing_patterns_skip_the_whole_image_strategies() {
        let g = finders_and_random(false);
        let e = finder_evidence(&g);
        assert!(e.qr_like && !e.timing, "{e:?}");
        assert!(finder_evidence(&finders_only()).timing);
        // The plain pass and the region's passes, then no whole-image strategy.
        let mut b = Budget::new(&unlimited());
        assert_eq!(run_named(&g, &mut b), (Vec::new(), "no-timing"));
        assert!(b.used() <= FREE_PASSES, "{} passes", b.used());
        // The exhaustive scan still tries everything.
        let mut b = Budget::new(&Limits {
            scan_exhaustive: true,
            ..unlimited()
        });
        assert!(run_named(&g, &mut b).0.is_empty());
        assert!(b.used() >= 8, "{} passes", b.used());
    }

    #[test]
    fn the_exhaustive_scan_ignores_the_gate_and_the_budget() {
        let exhaustive = Limits {
            scan_exhaustive: true,
            scan_time: Duration::ZERO,
            scan_passes: 1,
            ..Limits::default()
        };
        // No finders, a zero time and one pass: every strategy still runs.
        let mut b = Budget::new(&exhaustive);
        assert_eq!(run_named(&checker_only(), &mut b), (Vec::new(), "none"));
        assert!(b.used() >= 8, "{} passes", b.used());
    }

    #[test]
    fn pass_budget_caps_detector_passes_exactly() {
        // Finder patterns but no valid code: every strategy runs until the budget stops it.
        let g = finders_only();
        let mut all = Budget::new(&unlimited());
        assert!(run_named(&g, &mut all).0.is_empty());
        let total = all.used();
        assert!(total >= 8, "{total} passes without a budget");
        for cap in [1, 2, 3, 5, total - 1] {
            let mut b = Budget::new(&Limits {
                scan_passes: cap,
                ..unlimited()
            });
            let (found, how) = run_named(&g, &mut b);
            assert!(found.is_empty());
            assert_eq!(b.used(), cap);
            assert_eq!(how, "budget");
        }
    }

    #[test]
    fn zero_time_still_gets_exactly_the_free_passes() {
        let g = finders_only();
        let mut b = Budget::new(&Limits {
            scan_time: Duration::ZERO,
            ..unlimited()
        });
        assert!(run_named(&g, &mut b).0.is_empty());
        assert_eq!(b.used(), FREE_PASSES);
    }

    #[test]
    fn the_passes_decide_not_the_pace_of_the_machine() {
        // A slow pass (a busy machine) does not make the budget skip a later, bigger one: only
        // the pass count and the last-resort cap stop it.
        let mut b = Budget::new(&Limits {
            scan_time: Duration::from_secs(3600),
            scan_passes: 4,
            ..unlimited()
        });
        for _ in 0..3 {
            assert!(b
                .pass(&finders_only(), |_| std::thread::sleep(
                    Duration::from_millis(20)
                ))
                .is_some());
        }
        assert!(b.affords(u64::from(u32::MAX)));
        assert!(b.take(u64::from(u32::MAX)));
        assert!(!b.take(1));
        assert_eq!(b.used(), 4);
    }

    #[test]
    fn a_later_strategy_is_cut_off_by_the_pass_budget() {
        // A 2 px/module thumbnail read only after the plain passes: a budget of the plain passes
        // alone misses it, the default finds it.
        let payload = slip_payload();
        let g = thumbnail(&payload, 1.2, 4.0);
        let mut all = Budget::new(&unlimited());
        assert_eq!(run_named(&g, &mut all), (vec![payload], "lanczos"));
        let mut tight = Budget::new(&Limits {
            scan_passes: 2,
            ..unlimited()
        });
        assert!(run_named(&g, &mut tight).0.is_empty());
    }

    #[test]
    fn lanczos_reads_two_px_per_module_thumbnails() {
        let payload = slip_payload();
        // 1.2 px/module: neither decoder reads it as it is, nor after a bilinear ×2.
        let g = thumbnail(&payload, 1.2, 4.0);
        assert!(scan_rxing(&g, true).is_empty() && scan_rqrr(&g).is_empty());
        assert!(scan_rxing(&resize(&g, 2, FilterType::Triangle), true).is_empty());
        for module in [1.2f32, 1.4, 1.6, 1.8, 2.0, 2.2] {
            let g = thumbnail(&payload, module, 4.0);
            let up = upscale_lanczos(&g, 3);
            assert_eq!(up.dimensions(), (g.width() * 3, g.height() * 3));
            assert_eq!(
                scan_rxing(&up, true),
                vec![payload.clone()],
                "{module} px/module"
            );
        }
    }

    /// The `f32` Lanczos upscale `upscale_lanczos` replaced, as the reference.
    fn upscale_lanczos_float(g: &GrayImage, f: u32) -> GrayImage {
        let (w, h, f) = (g.width() as i64, g.height() as i64, i64::from(f));
        let k = |x: f64| {
            let s = |x: f64| {
                if x.abs() < 1e-9 {
                    1.0
                } else {
                    (std::f64::consts::PI * x).sin() / (std::f64::consts::PI * x)
                }
            };
            if x.abs() < 3.0 {
                s(x) * s(x / 3.0)
            } else {
                0.0
            }
        };
        let weights = |o: i64| {
            let pos = (o as f64 + 0.5) / f as f64 - 0.5;
            let base = pos.floor();
            let ws: Vec<(i64, f64)> = (-2..=3)
                .map(|j| (base as i64 + j, k(pos - (base + j as f64))))
                .collect();
            let sum: f64 = ws.iter().map(|w| w.1).sum();
            ws.into_iter().map(move |(i, wt)| (i, wt / sum))
        };
        GrayImage::from_fn((w * f) as u32, (h * f) as u32, |ox, oy| {
            let mut v = 0.0;
            for (sy, wy) in weights(i64::from(oy)) {
                for (sx, wx) in weights(i64::from(ox)) {
                    let p = g.get_pixel(sx.clamp(0, w - 1) as u32, sy.clamp(0, h - 1) as u32);
                    v += wx * wy * f64::from(p.0[0]);
                }
            }
            image::Luma([v.round().clamp(0.0, 255.0) as u8])
        })
    }

    #[test]
    fn lanczos_fixed_point_matches_float() {
        let g = thumbnail(&slip_payload(), 1.4, 2.0);
        let g = GrayImage::from_fn(61.min(g.width()), 47.min(g.height()), |x, y| {
            *g.get_pixel(
                x + g.width() - 61.min(g.width()),
                y + g.height() - 47.min(g.height()),
            )
        });
        for f in [1, 2, 3] {
            let (fast, slow) = (upscale_lanczos(&g, f), upscale_lanczos_float(&g, f));
            assert_eq!(fast.dimensions(), slow.dimensions());
            for (a, b) in fast.iter().zip(slow.iter()) {
                assert!(a.abs_diff(*b) <= 1, "f {f}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn lanczos_upscale_keeps_flat_areas_and_steps() {
        let g = GrayImage::from_fn(6, 4, |x, _| image::Luma([if x < 3 { 20 } else { 220 }]));
        let up = upscale_lanczos(&g, 3);
        assert_eq!(up.dimensions(), (18, 12));
        // Far from the edge, the levels are exact; across it, monotone.
        assert_eq!(up.get_pixel(0, 5).0, [20]);
        assert_eq!(up.get_pixel(17, 5).0, [220]);
        let row: Vec<u8> = (0..18).map(|x| up.get_pixel(x, 5).0[0]).collect();
        assert!(
            row.windows(2)
                .all(|w| i32::from(w[0]) <= i32::from(w[1]) + 25),
            "{row:?}"
        );
    }

    #[test]
    fn rank_filter_matches_naive() {
        let g = GrayImage::from_fn(23, 17, |x, y| {
            image::Luma([((x * 53 + y * 97 + x * y) % 251) as u8])
        });
        for r in [1u32, 2, 3] {
            for max in [false, true] {
                let fast = rank_filter(&g, r, max);
                for (x, y, p) in fast.enumerate_pixels() {
                    let (r, xi, yi) = (r as i64, x as i64, y as i64);
                    let mut want = g.get_pixel(x, y).0[0];
                    for yy in (yi - r).max(0)..=(yi + r).min(16) {
                        for xx in (xi - r).max(0)..=(xi + r).min(22) {
                            let v = g.get_pixel(xx as u32, yy as u32).0[0];
                            want = if max { want.max(v) } else { want.min(v) };
                        }
                    }
                    assert_eq!(p.0[0], want, "r {r} max {max} at {x},{y}");
                }
            }
        }
    }

    #[test]
    fn mean_binarize_radius_matches_the_integral_image() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for (w, h) in [(1, 1), (2, 9), (17, 5), (64, 65), (301, 240)] {
            let g = GrayImage::from_fn(w, h, |x, y| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                image::Luma([((u64::from((x / 4 + y / 3) % 2) * 100 + 70 + seed % 40) % 256) as u8])
            });
            for r in [1, 3, 8, 40, 120] {
                for bias in [0, 10] {
                    assert_eq!(
                        mean_binarize_radius(&g, r, bias as u32 + 1, 1),
                        local_mean_threshold_reference_radius(&g, bias, r),
                        "{w}x{h} r {r} bias {bias}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_region_strategy_survives_odd_shapes() {
        // Empty, one pixel, one row, flat, noise; modules from tiny to huge (the fuzz target
        // reaches the same code with any decoded image).
        let mut seed = 7u64;
        let mut noise = |w, h| {
            GrayImage::from_fn(w, h, |_, _| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                image::Luma([(seed >> 56) as u8])
            })
        };
        let images = [
            GrayImage::new(0, 0),
            GrayImage::new(1, 1),
            GrayImage::new(1, 300),
            GrayImage::new(300, 1),
            GrayImage::from_pixel(50, 50, image::Luma([200])),
            noise(97, 61),
            noise(3, 3),
        ];
        for g in &images {
            for m in [0.5, 1.0, 3.0, 6.4, 16.0] {
                for low in [false, true] {
                    assert!(every_region_strategy(g, m, low).is_empty());
                }
            }
        }
        assert!(crate::read_as_qr_region(&images[5], f32::NAN, false).is_empty());
    }

    #[test]
    fn local_mean_threshold_matches_the_integral_image() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for (w, h) in [(1, 1), (3, 70), (9, 9), (64, 65), (300, 41), (1000, 700)] {
            for smooth in [false, true] {
                let g = GrayImage::from_fn(w, h, |x, y| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let v = if smooth {
                        u64::from((x / 3 + y / 5) % 2) * 90 + 80 + seed % 3
                    } else {
                        seed
                    };
                    image::Luma([(v % 256) as u8])
                });
                for bias in [0, 10] {
                    assert_eq!(
                        local_mean_threshold(&g, bias),
                        local_mean_threshold_reference(&g, bias),
                        "{w}x{h} smooth {smooth} bias {bias}"
                    );
                }
            }
        }
    }

    #[test]
    fn box_blur3_matches_the_reference() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (w, h) in [
            (1, 1),
            (1, 4),
            (2, 1),
            (2, 2),
            (3, 3),
            (17, 5),
            (64, 33),
            (301, 2),
        ] {
            let g = GrayImage::from_fn(w, h, |_, _| image::Luma([next() as u8]));
            assert_eq!(box_blur3(&g), box_blur3_reference(&g), "{w}×{h}");
        }
        let g = GrayImage::new(0, 3);
        assert_eq!(box_blur3(&g).dimensions(), (0, 3));
    }

    /// `centres_of` with the means divided out at every comparison, as it was.
    #[allow(clippy::type_complexity)]
    fn centres_of_reference(hits: &[Hit]) -> (Vec<(f32, f32, f32)>, Vec<f32>, Vec<u32>) {
        let mut centres: Vec<(f32, f32, f32, u32, u32)> = Vec::new();
        for &(x, y, m, l) in hits {
            let near = centres.iter().position(|c| {
                let n = c.3 as f32;
                let (cx, cy, cm) = (c.0 / n, c.1 / n, c.2 / n);
                (cx - x).abs() <= 2.0 * cm.max(m) && (cy - y).abs() <= 4.0 * cm.max(m)
            });
            match near {
                Some(i) => {
                    let c = &mut centres[i];
                    *c = (c.0 + x, c.1 + y, c.2 + m, c.3 + 1, c.4 + u32::from(l));
                }
                None if centres.len() < 4 * EVIDENCE_MAX_CENTRES => {
                    centres.push((x, y, m, 1, u32::from(l)))
                }
                None => {}
            }
        }
        centres.retain(|c| c.3 >= 2);
        centres.sort_by_key(|c| std::cmp::Reverse(c.3));
        centres.truncate(EVIDENCE_MAX_CENTRES);
        let mut out = (Vec::new(), Vec::new(), Vec::new());
        for c in &centres {
            let n = c.3 as f32;
            out.0.push((c.0 / n, c.1 / n, c.2 / n));
            out.1.push(c.4 as f32 / n);
            out.2.push(c.3);
        }
        out
    }

    #[test]
    fn centres_of_matches_the_reference() {
        let mut seed = 0x0bad_5eed_1234_5678u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (n, spread) in [(10, 50), (500, 300), (5_000, 2_000), (20_000, 800)] {
            let hits: Vec<Hit> = (0..n)
                .map(|_| {
                    let v = next();
                    (
                        (v % spread) as f32 + (v >> 40 & 3) as f32 * 0.5,
                        ((v >> 16) % spread) as f32,
                        1.0 + (v >> 32 & 15) as f32 / 3.0,
                        v >> 48 & 1 == 1,
                    )
                })
                .collect();
            assert_eq!(centres_of(&hits), centres_of_reference(&hits), "{n} hits");
        }
        for p in crate::corpus_images().iter().step_by(17) {
            let bytes = std::fs::read(p).unwrap();
            let g = crate::decode_gray(&bytes, &crate::Limits::default()).unwrap();
            let mut hits = Vec::new();
            fine_hits(&fit(&g, WORK_SIDE), &mut hits);
            assert_eq!(centres_of(&hits), centres_of_reference(&hits), "{p:?}");
        }
    }

    #[test]
    fn divide_by_reciprocal_is_exact() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for d in (1..2_000).chain([200 * 300, 200 * 2_000, u32::MAX as u64, 1 << 40]) {
            let by = Divide::by(d);
            for n in [0, 1, d - 1, d, d + 1, (1 << 32) - 1, 1 << 32, u64::MAX / 95] {
                assert_eq!(by.div(n), n / d, "{n} / {d}");
            }
            for _ in 0..200 {
                let n = next() >> (next() % 64);
                assert_eq!(by.div(n), n / d, "{n} / {d}");
            }
        }
    }

    #[test]
    fn keep_is_exact() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for s in (1..3_000).chain([65_535, 1 << 20, (1 << 24) + 7]) {
            let k = Keep::of(s);
            let exact = |a: u64| (u128::from(a) * u128::from(s - 1) / u128::from(s)) as u64;
            let check = |a: u64| assert_eq!(k.of_avg(a), exact(a), "{a} · {} / {s}", s - 1);
            for a in [
                0,
                1,
                s - 1,
                s,
                s + 1,
                255 * s,
                255 * s + 255,
                (1 << 32) - 1,
                1 << 32,
            ] {
                check(a);
            }
            for _ in 0..300 {
                let a = next() >> (32 + next() % 32);
                check(a);
                // Multiples of s and their neighbours: where the floor would slip first.
                let m = (a / s.max(1)) * s;
                for a in [m.saturating_sub(1), m, m + 1] {
                    check(a);
                }
            }
        }
    }

    /// Our rqrr binarisation is rqrr's, bit for bit: odd widths (s = 1, rows shorter than 8),
    /// noise, gradients and real slips.
    #[test]
    fn rqrr_threshold_matches_rqrr() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut images: Vec<GrayImage> = Vec::new();
        for (w, h) in [
            (1, 1),
            (1, 7),
            (7, 1),
            (8, 3),
            (15, 16),
            (64, 65),
            (601, 9),
            (2401, 3),
        ] {
            images.push(GrayImage::from_fn(w, h, |_, _| image::Luma([next() as u8])));
            images.push(GrayImage::from_fn(w, h, |x, y| {
                image::Luma([((x * 7 + y * 3) as u64 + next() % 16) as u8])
            }));
            images.push(GrayImage::from_pixel(w, h, image::Luma([255])));
        }
        for p in crate::corpus_images().iter().step_by(23) {
            let bytes = std::fs::read(p).unwrap();
            let g = crate::decode_gray(&bytes, &crate::Limits::default()).unwrap();
            images.push(fit(&g, 700).into_owned());
        }
        for g in &images {
            let (w, h) = (g.width() as usize, g.height() as usize);
            let raw = g.as_raw();
            let theirs = rqrr::PreparedImage::prepare_from_greyscale(w, h, |x, y| raw[y * w + x]);
            let ours = rqrr_threshold(g);
            for y in 0..h {
                for x in 0..w {
                    // (rqrr's colour type is not exported; its `Debug` names it.)
                    let black = format!("{:?}", theirs.get_pixel_at(x, y)) == "Black";
                    assert_eq!(ours[y * w + x], black, "{w}×{h} at ({x}, {y})");
                }
            }
        }
    }

    #[test]
    fn upscale_bilinear2_matches_image_resize() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (w, h) in [
            (1, 1),
            (1, 5),
            (6, 1),
            (2, 2),
            (7, 3),
            (31, 17),
            (64, 65),
            (601, 9),
        ] {
            for smooth in [false, true] {
                let g = GrayImage::from_fn(w, h, |x, y| {
                    let v = if smooth {
                        (x * 7 + y * 3) as u64 + next() % 4
                    } else {
                        next()
                    };
                    image::Luma([(v % 256) as u8])
                });
                assert_eq!(
                    upscale_bilinear2(&g).as_raw(),
                    resize(&g, 2, FilterType::Triangle).as_raw(),
                    "{w}x{h} smooth {smooth}"
                );
            }
        }
        // Every pair and quadruple of extremes (rounding at the halves).
        let g = GrayImage::from_fn(16, 16, |x, y| {
            image::Luma([[0, 1, 254, 255][((x + 3 * y) % 4) as usize]])
        });
        assert_eq!(
            upscale_bilinear2(&g).as_raw(),
            resize(&g, 2, FilterType::Triangle).as_raw()
        );
    }

    #[test]
    fn box_blur3_averages_the_neighbourhood() {
        let mut g = GrayImage::from_pixel(5, 5, image::Luma([0]));
        g.put_pixel(2, 2, image::Luma([90]));
        let b = box_blur3(&g);
        assert_eq!(b.get_pixel(2, 2).0, [10]);
        assert_eq!(b.get_pixel(1, 1).0, [10]);
        assert_eq!(b.get_pixel(0, 0).0, [0]);
    }

    #[test]
    fn smooth_reads_a_striped_screen_photo() {
        // Sub-pixel-like vertical stripes every 3 px over a 4 px/module QR: too strong for the
        // decoders' own binariser, gone after a 3×3 average.
        let payload = slip_payload();
        let base = thumbnail(&payload, 4.0, 1.6);
        let striped = GrayImage::from_fn(base.width(), base.height(), |x, y| {
            let v = f64::from(base.get_pixel(x, y).0[0]);
            let k = if x % 3 == 0 { 1.0 } else { 0.3 };
            image::Luma([(v * k + 30.0 * (1.0 - k)).round() as u8])
        });
        assert!(scan_rxing(&striped, true).is_empty());
        let out = scan_rxing(&box_blur3(&striped), true);
        assert_eq!(out, vec![payload]);
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
            time(f, "stats", || usize::from(Stats::of(&g).dark()));
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
        let files = crate::corpus_images();
        let mut tally = std::collections::BTreeMap::<String, [usize; 5]>::new();
        for p in files {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
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
            let work = if Stats::of(&work).dark() {
                invert(&work)
            } else {
                work
            };
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

#[cfg(test)]
mod gate_timing {
    use super::*;
    use std::time::Instant;

    /// Where the evidence gate's time goes, on the images of `$GATE_DIR` (not part of the
    /// default run): `GATE_DIR=/tmp/hard cargo test --release -p reader --lib gate_timing --
    /// --ignored --nocapture`
    #[test]
    #[ignore]
    fn gate_timing() {
        let Some(dir) = std::env::var_os("GATE_DIR") else {
            return;
        };
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x != "json"))
            .collect();
        files.sort();
        let filter = std::env::var("GATE_FILTER").unwrap_or_default();
        for p in files {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if !name.contains(&filter) {
                continue;
            }
            let bytes = std::fs::read(&p).unwrap();
            let full = crate::decode_gray(&bytes, &crate::Limits::default()).unwrap();
            let work = fit(&full, WORK_SIDE).into_owned();
            // Fastest of five: the machine is shared, the minimum is the least noisy figure.
            let time = |fun: &dyn Fn() -> usize| {
                let mut best = f64::MAX;
                let mut k = 0;
                for _ in 0..5 {
                    let t = Instant::now();
                    k = fun();
                    best = best.min(t.elapsed().as_secs_f64() * 1e3);
                }
                (best, k)
            };
            let half = box_downscale(&work, 2);
            let (t_half, _) = time(&|| box_downscale(&work, 2).width() as usize);
            let (t_bin_h, _) = time(&|| evidence_binarize(&half).width() as usize);
            let bin_h = evidence_binarize(&half);
            let (t_hits_h, n_h) = time(&|| {
                let mut n = 0;
                finder_hits_in(&bin_h, 7, &mut |_, _, _, _| n += 1);
                n
            });
            let (t_bin, _) = time(&|| evidence_binarize(&work).width() as usize);
            let bin = evidence_binarize(&work);
            let (t_hits, n) = time(&|| {
                let mut n = 0;
                finder_hits_in(&bin, 14, &mut |_, _, _, _| n += 1);
                n
            });
            let (t_up, _) = time(&|| upscale_lanczos(&work, 2).width() as usize);
            let (t_gate, q) = time(&|| usize::from(finder_evidence(&work).qr_like));
            let (t_plain, _) = time(&|| scan_rxing(&work, true).len());
            eprintln!(
                "{name:16} {}x{} half {t_half:.1} bin/2 {t_bin_h:.1} hits/2 {t_hits_h:.1} ({n_h}) bin {t_bin:.1} hits {t_hits:.1} ({n}) lanczos2 {t_up:.1} | gate {t_gate:.1} ({q}) plain {t_plain:.1}",
                work.width(),
                work.height()
            );
        }
    }
}

#[cfg(test)]
#[path = "lab.rs"]
mod lab;
