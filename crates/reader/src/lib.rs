//! Slip image bytes → QR payload text.
//!
//! Pure and synchronous: no I/O besides the bytes handed in. Hostile input is expected, so
//! the size is checked before anything else, the image kind is sniffed from magic bytes, the
//! pixel count is read from the header and refused *before* any pixel buffer is allocated
//! (decompression bombs), and decoder panics are contained.
//!
//! QR detection uses two pure-Rust decoders: `rxing` (a zxing port, the strong one) and `rqrr`
//! (last, small images only), over a list of preprocessing strategies ordered by measured
//! yield (plain, a closing for speckled thermal prints, a Lanczos upscale for thumbnails, 2×2
//! average or 3×3 blur against moiré, inverted, local-mean and Otsu thresholds), stopping at
//! the first one that yields a QR code, within the scan budget of [`Limits`]. When the free
//! passes fail, the later strategies run only if a cheap finder-pattern check sees three
//! finders placed like a QR's, so a picture without a QR fails after those passes (on big
//! images the check comes before the plain pass, so there it fails after the half-size pass);
//! the strategies then run on the QR region those finders span first, then the whole image.

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use image::{DynamicImage, GrayImage, ImageFormat, ImageReader};

mod cpp_port;
mod hybrid;
mod java_port;
#[doc(hidden)]
pub mod probe;
mod strategies;
#[doc(hidden)]
pub use strategies::Evidence;

/// Input limits applied before decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted input, in bytes.
    pub max_bytes: usize,
    /// Largest accepted width × height, read from the header before decoding.
    pub max_pixels: u64,
    /// Last-resort cap on the QR search of one image, counted from the start of the read
    /// (image decoding included): no new detector pass starts after it. The work budget is
    /// `scan_passes`; this cap is generous (default 5 s, several times the slowest read's work on an idle core) so that what is read does not depend
    /// on the machine's load. The first two passes (half size and plain) always run, except
    /// that the plain pass of a big image (short side ≥ 450 px) runs only when the evidence
    /// gate sees finder patterns.
    pub scan_time: std::time::Duration,
    /// Most detector passes (one decoder on one prepared image, at most the working image's
    /// pixels times a fixed upscale) spent on one image: the scan's work budget.
    pub scan_passes: u32,
    /// Longest accepted side, in pixels (a 39,000,000×1 image is 39 MP but not a slip).
    pub max_side: u32,
    /// Largest accepted ratio of the long side to the short one (slips are at most ~1:2;
    /// long scrolled screenshots stay well inside).
    pub max_aspect: u32,
    /// The exhaustive scan: no evidence gate, no early exit, no pass or time budget (every
    /// strategy runs until one reads). The reference the default scan's recall is checked
    /// against; seconds on a picture without a QR, so not for serving.
    pub scan_exhaustive: bool,
}

/// Default longest side, in pixels.
pub const DEFAULT_MAX_SIDE: u32 = 16_384;
/// Default largest long-to-short side ratio.
pub const DEFAULT_MAX_ASPECT: u32 = 25;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 4 * 1024 * 1024,
            max_pixels: 40_000_000,
            scan_time: std::time::Duration::from_millis(5000),
            scan_passes: 12,
            max_side: DEFAULT_MAX_SIDE,
            max_aspect: DEFAULT_MAX_ASPECT,
            scan_exhaustive: false,
        }
    }
}

/// Image container kinds we accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    Jpeg,
    Png,
    Gif,
    WebP,
}

impl ImageKind {
    fn format(self) -> ImageFormat {
        match self {
            ImageKind::Jpeg => ImageFormat::Jpeg,
            ImageKind::Png => ImageFormat::Png,
            ImageKind::Gif => ImageFormat::Gif,
            ImageKind::WebP => ImageFormat::WebP,
        }
    }
}

/// Why no payload came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// More bytes than `Limits::max_bytes`.
    TooLarge,
    /// Not a JPEG/PNG/GIF/WebP, or a corrupt / truncated one.
    NotAnImage,
    /// The header declares more pixels than `Limits::max_pixels` (refused before allocating).
    TooManyPixels,
    /// The image decoded but no QR code was found in it.
    NoQr,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReadError::TooLarge => "input too large",
            ReadError::NotAnImage => "not a supported image",
            ReadError::TooManyPixels => "image dimensions too large",
            ReadError::NoQr => "no QR code found",
        })
    }
}

impl std::error::Error for ReadError {}

/// Identify the image kind from magic bytes (never from a file name or a declared type).
pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(ImageKind::Jpeg)
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageKind::Png)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(ImageKind::Gif)
    } else if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(ImageKind::WebP)
    } else {
        None
    }
}

/// Decode `bytes` to an 8-bit grayscale image, enforcing `limits`.
///
/// Straight to luma where the format allows it: a YCbCr/greyscale JPEG yields its Y channel
/// (no chroma IDCT, upsampling or colour conversion), a still lossy WebP its Y plane, PNG
/// rows (plain or Adam7) convert to luma as they are unfiltered (no full-size RGB buffer), a
/// GIF's first frame maps palette indices through a luma table, and anything unusual (CMYK
/// JPEG, lossless or animated WebP) decodes through `image` and converts to luma in one
/// integer pass. In every path the dimensions come from the header and are checked before any
/// pixel buffer is allocated, and metadata is never inflated (docs/decisions.md, issue 28).
pub fn decode_gray(bytes: &[u8], limits: &Limits) -> Result<GrayImage, ReadError> {
    if bytes.len() > limits.max_bytes {
        return Err(ReadError::TooLarge);
    }
    let kind = sniff(bytes).ok_or(ReadError::NotAnImage)?;
    catch_unwind(AssertUnwindSafe(|| match kind {
        ImageKind::Jpeg => decode_jpeg_luma(bytes, limits),
        ImageKind::WebP => decode_webp_luma(bytes, limits),
        ImageKind::Png => decode_png_luma(bytes, limits),
        ImageKind::Gif => decode_gif_luma(bytes, limits),
    }))
    .map_err(|_| ReadError::NotAnImage)?
}

/// Working memory of the QR scan per pixel scanned (the detectors' copies, binarized
/// matrices and one preprocessed image at a time); see `docs/benchmarks.md` for the figures.
const SCAN_BYTES_PER_PIXEL: u64 = 6;
/// The scan works on at most this many pixels (a fitted copy, or the full-resolution last
/// resort, which `strategies` caps at 16 MP).
const SCAN_MAX_PIXELS: u64 = 16_000_000;

/// The memory a decode and scan of `bytes` may hold at its peak, in bytes, estimated from the
/// header alone — after the same size, kind and dimension checks [`decode_gray`] makes first,
/// so a refused image is refused here with the same error. Callers admit decodes against a
/// shared memory budget with it.
pub fn decode_cost(bytes: &[u8], limits: &Limits) -> Result<u64, ReadError> {
    if bytes.len() > limits.max_bytes {
        return Err(ReadError::TooLarge);
    }
    let kind = sniff(bytes).ok_or(ReadError::NotAnImage)?;
    let (pixels, decode) = catch_unwind(AssertUnwindSafe(|| header_cost(bytes, kind, limits)))
        .map_err(|_| ReadError::NotAnImage)??;
    let scan = pixels.min(SCAN_MAX_PIXELS) * SCAN_BYTES_PER_PIXEL;
    Ok(decode + DECODER_FIXED + scan + bytes.len() as u64)
}

/// Bytes per decoded pixel held by each decode path at its peak (the luma output included),
/// measured alone in release builds (`docs/benchmarks.md`, "Decode memory per format") and
/// rounded up.
mod per_pixel {
    /// PNG of any colour type and bit depth, interlaced or not: rows to luma (measured 1.0).
    pub const PNG: u64 = 1;
    /// GIF: the first frame's palette indices, then the screen in luma (2.0).
    pub const GIF: u64 = 2;
    /// Baseline YCbCr or grey JPEG: the Y channel straight to luma (1.0).
    pub const JPEG_BASELINE: u64 = 2;
    /// Progressive YCbCr or grey JPEG: each component's coefficients (2 bytes a sample) until
    /// the last scan, then luma (6.7 at 4:4:4, 3.8 at 4:2:0, 2.9 grey).
    pub const JPEG_PROGRESSIVE: u64 = 8;
    /// Baseline CMYK, YCCK or RGB-coded JPEG: through `image` to RGB, then luma (3.9).
    pub const JPEG_VIA_IMAGE: u64 = 5;
    /// The same, progressive: four components' coefficients, RGB, then luma (10.5).
    pub const JPEG_VIA_IMAGE_PROGRESSIVE: u64 = 12;
    /// A lossy WebP with one still frame: the Y, U and V planes and the luma output (2.4).
    pub const WEBP_LOSSY: u64 = 3;
    /// A simple lossless WebP: through `image`, its ARGB pixels, RGB, then luma (6.7).
    pub const WEBP_LOSSLESS: u64 = 8;
    /// An extended WebP that is not a still lossy frame (animated; lossless with alpha or
    /// metadata): through `image`, a frame, the canvas, RGBA, then luma (11.5 animated).
    pub const WEBP_VIA_IMAGE: u64 = 13;
}

/// What any decode holds besides its pixel buffers: the inflater's window and tables, the PNG
/// decoder's 128 KiB stream buffer, Huffman tables (a 210×210 PNG held 460 KB in all).
const DECODER_FIXED: u64 = 1 << 20;

/// Pixels of the decoded image and the bytes its decode holds, from the header: the pixel
/// buffers of the path `decode_gray` takes for this header, and the metadata the decoder still
/// copies (never inflates): a PNG's raw `eXIf`, a GIF's ICC/XMP extensions, the copy of a JPEG
/// without its metadata segments.
fn header_cost(bytes: &[u8], kind: ImageKind, limits: &Limits) -> Result<(u64, u64), ReadError> {
    match kind {
        ImageKind::Png => {
            let mut dec = png_decoder(bytes);
            let info = dec.read_header_info().map_err(|_| ReadError::NotAnImage)?;
            let (w, h) = (u64::from(info.width), u64::from(info.height));
            check_dims(w, h, limits)?;
            // The decoder's rows (raw, previous, output: up to 8 bytes a pixel each), and an
            // `eXIf` chunk: its buffer grows by doubling, then is copied.
            let exif = png_chunk_bytes(bytes, *b"eXIf");
            Ok((w * h, w * h * per_pixel::PNG + w * 32 + 3 * exif))
        }
        ImageKind::Gif => {
            let mut opts = gif::DecodeOptions::new();
            opts.set_color_output(gif::ColorOutput::Indexed);
            let mut dec = opts
                .read_info(Cursor::new(bytes))
                .map_err(|_| ReadError::NotAnImage)?;
            let (w, h) = (u64::from(dec.width()), u64::from(dec.height()));
            let frame = dec
                .next_frame_info()
                .map_err(|_| ReadError::NotAnImage)?
                .ok_or(ReadError::NotAnImage)?;
            let (fw, fh) = (u64::from(frame.width), u64::from(frame.height));
            check_dims(w, h, limits)?;
            check_dims(fw, fh, limits)?;
            // ICC and XMP application extensions are gathered whole (never more than the
            // input holds).
            Ok((
                w * h,
                (w * h).max(fw * fh) * per_pixel::GIF + bytes.len() as u64,
            ))
        }
        ImageKind::Jpeg => {
            let (stripped, progressive) = jpeg_without_metadata(bytes);
            let mut dec = jpeg_decoder(&stripped);
            dec.decode_headers().map_err(|_| ReadError::NotAnImage)?;
            let (w, h) = dec.dimensions().ok_or(ReadError::NotAnImage)?;
            let (w, h) = (w as u64, h as u64);
            check_dims(w, h, limits)?;
            let per = match (jpeg_direct(&dec, w * h), progressive) {
                (true, false) => per_pixel::JPEG_BASELINE,
                (true, true) => per_pixel::JPEG_PROGRESSIVE,
                (false, false) => per_pixel::JPEG_VIA_IMAGE,
                (false, true) => per_pixel::JPEG_VIA_IMAGE_PROGRESSIVE,
            };
            let copy = match stripped {
                std::borrow::Cow::Owned(v) => v.len() as u64,
                std::borrow::Cow::Borrowed(_) => 0,
            };
            Ok((w * h, w * h * per + copy))
        }
        ImageKind::WebP => {
            // Metadata chunks (ICCP, EXIF, XMP) are only located, never read: `image` asks
            // for none of them.
            let (w, h) = image_reader(bytes, kind, limits)
                .into_dimensions()
                .map_err(map_image_err)?;
            let (w, h) = (u64::from(w), u64::from(h));
            check_dims(w, h, limits)?;
            let per = if webp_vp8_chunk(bytes).is_some() {
                per_pixel::WEBP_LOSSY
            } else if &bytes[12..16] == b"VP8L" {
                per_pixel::WEBP_LOSSLESS
            } else {
                per_pixel::WEBP_VIA_IMAGE
            };
            Ok((w * h, w * h * per))
        }
    }
}

/// Total length of the PNG chunks of type `kind` before the first `IDAT` (a walk over the chunk
/// headers, nothing read or inflated).
fn png_chunk_bytes(bytes: &[u8], kind: [u8; 4]) -> u64 {
    let mut total = 0;
    let mut i = 8;
    while let Some(head) = bytes.get(i..i + 8) {
        let len = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
        if head[4..8] == *b"IDAT" {
            break;
        }
        if head[4..8] == kind {
            total += len;
        }
        let Some(next) = usize::try_from(len)
            .ok()
            .and_then(|l| (i + 12).checked_add(l))
        else {
            break;
        };
        i = next;
    }
    total
}

/// Refuse empty images, more pixels than the limit, a side longer than the limit and a shape
/// more elongated than the limit (called on header dimensions only). The shape matters as
/// much as the count: the scanning strategies downscale by the long side, and a 39,000,000×1
/// image has nothing left to downscale to.
fn check_dims(w: u64, h: u64, limits: &Limits) -> Result<(), ReadError> {
    if w == 0 || h == 0 {
        return Err(ReadError::NotAnImage);
    }
    let (long, short) = (w.max(h), w.min(h));
    if w.saturating_mul(h) > limits.max_pixels
        || long > u64::from(limits.max_side)
        || long > short.saturating_mul(u64::from(limits.max_aspect.max(1)))
    {
        return Err(ReadError::TooManyPixels);
    }
    Ok(())
}

/// zune-jpeg over `bytes`, lenient, asked for luma.
fn jpeg_decoder(bytes: &[u8]) -> zune_jpeg::JpegDecoder<zune_core::bytestream::ZCursor<&[u8]>> {
    use zune_core::colorspace::ColorSpace;
    // JPEG's own maximum: the side and shape limits are `check_dims`'s, with their own error.
    let side = usize::from(u16::MAX);
    let options = zune_core::options::DecoderOptions::default()
        .set_strict_mode(false)
        .set_max_width(side)
        .set_max_height(side)
        .jpeg_set_out_colorspace(ColorSpace::Luma);
    zune_jpeg::JpegDecoder::new_with_options(zune_core::bytestream::ZCursor::new(bytes), options)
}

/// Whether a JPEG whose headers `dec` has read yields its Y channel directly (YCbCr or grey,
/// one byte a pixel); CMYK/YCCK/RGB-coded ones have no Y channel to take.
fn jpeg_direct<T: zune_core::bytestream::ZByteReaderTrait>(
    dec: &zune_jpeg::JpegDecoder<T>,
    pixels: u64,
) -> bool {
    use zune_core::colorspace::ColorSpace;
    matches!(
        dec.input_colorspace(),
        Some(ColorSpace::YCbCr | ColorSpace::Luma)
    ) && dec.output_buffer_size().map(|s| s as u64) == Some(pixels)
}

/// JPEG → its Y channel via `zune-jpeg` (the decoder `image` uses too, same lenient settings).
/// CMYK/YCCK/RGB-coded JPEGs have no Y channel to take: they go through `image`.
fn decode_jpeg_luma(bytes: &[u8], limits: &Limits) -> Result<GrayImage, ReadError> {
    let (stripped, _) = jpeg_without_metadata(bytes);
    let bytes = &stripped[..];
    let mut dec = jpeg_decoder(bytes);
    // Headers only: nothing is allocated for pixels yet.
    dec.decode_headers().map_err(|_| ReadError::NotAnImage)?;
    let (w, h) = dec.dimensions().ok_or(ReadError::NotAnImage)?;
    check_dims(w as u64, h as u64, limits)?;
    if !jpeg_direct(&dec, (w * h) as u64) {
        return decode_via_image(bytes, ImageKind::Jpeg, limits);
    }
    let size = w * h;
    let mut out = vec![0u8; size];
    dec.decode_into(&mut out)
        .map_err(|_| ReadError::NotAnImage)?;
    GrayImage::from_raw(w as u32, h as u32, out).ok_or(ReadError::NotAnImage)
}

/// A JPEG's bytes without the segments a decoder would copy into memory as metadata (APP1 to
/// APP13 and APP15: EXIF, XMP, extended XMP, ICC profile chunks, IPTC…; and COM), before and
/// between scans; APP0 (JFIF) and APP14 (Adobe: the colour transform) stay. Borrowed when there is
/// nothing to drop. Also whether a frame header is progressive (SOF2, SOF6, SOF10, SOF14).
///
/// zune-jpeg copies each such segment (a 4 MB file of tiny ICC segments became 200,000 vectors)
/// and re-sorts its extended-XMP pieces after every marker, which is quadratic; the pixels need
/// none of them. Anything it cannot walk (no length, a length past the end) is kept as it is
/// from there on, for the decoder to judge.
fn jpeg_without_metadata(bytes: &[u8]) -> (std::borrow::Cow<'_, [u8]>, bool) {
    // The kept bytes, gathered from the first dropped segment on (from `kept_from`).
    let mut out: Option<Vec<u8>> = None;
    let mut kept_from = 0;
    let mut progressive = false;
    let mut i = 2;
    while i + 4 <= bytes.len() && bytes[i] == 0xFF {
        let m = bytes[i + 1];
        if m == 0xFF || m == 0x01 || (0xD0..=0xD7).contains(&m) {
            // Fill byte or a marker without a length.
            i += if m == 0xFF { 1 } else { 2 };
            continue;
        }
        if m == 0xD9 {
            break;
        }
        let end = i + 2 + usize::from(u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]));
        if end < i + 4 || end > bytes.len() {
            break;
        }
        progressive |= matches!(m, 0xC2 | 0xC6 | 0xCA | 0xCE);
        if matches!(m, 0xE1..=0xED | 0xEF | 0xFE) {
            out.get_or_insert_with(Vec::new)
                .extend_from_slice(&bytes[kept_from..i]);
            kept_from = end;
        }
        i = end;
        if m == 0xDA {
            // Entropy-coded data up to the next marker (a progressive file has more segments
            // between its scans): 0xFF is followed by 0x00 (stuffing) or a restart marker.
            while i + 1 < bytes.len()
                && (bytes[i] != 0xFF || matches!(bytes[i + 1], 0x00 | 0xD0..=0xD7 | 0xFF))
            {
                i += 1;
            }
        }
    }
    match out {
        None => (std::borrow::Cow::Borrowed(bytes), progressive),
        Some(mut out) => {
            out.extend_from_slice(&bytes[kept_from..]);
            (std::borrow::Cow::Owned(out), progressive)
        }
    }
}

/// The `VP8 ` chunk of a lossy WebP with one still frame: a simple file (`RIFF…WEBPVP8 `) or
/// an extended one (`VP8X`, not animated) whose other chunks are alpha (`ALPH`) or metadata
/// (`ICCP`, `EXIF`, `XMP `), all passed over unread. `None` for lossless and animated files.
fn webp_vp8_chunk(bytes: &[u8]) -> Option<&[u8]> {
    let chunk_at = |at: usize| -> Option<(&[u8], &[u8], usize)> {
        let head = bytes.get(at..at.checked_add(8)?)?;
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        let body = bytes.get(at + 8..(at + 8).checked_add(len)?)?;
        Some((&head[..4], body, at + 8 + len + (len & 1)))
    };
    let (kind, body, mut next) = chunk_at(12)?;
    match kind {
        b"VP8 " => Some(body),
        // Animation flag (bit 1) clear: the image data is a top-level chunk.
        b"VP8X" if body.first()? & 0x02 == 0 => loop {
            let (kind, body, after) = chunk_at(next)?;
            match kind {
                b"VP8 " => return Some(body),
                b"VP8L" | b"ANMF" => return None,
                _ => next = after,
            }
        },
        _ => None,
    }
}

/// A lossy WebP with one still frame (simple, or extended with alpha or metadata) → its Y
/// plane, skipping the chroma upsampling, the alpha plane and the YUV→RGB→luma round trip
/// (alpha is dropped anyway, as `into_luma8` does); lossless and animated ones go through
/// `image`.
fn decode_webp_luma(bytes: &[u8], limits: &Limits) -> Result<GrayImage, ReadError> {
    let Some(chunk) = webp_vp8_chunk(bytes) else {
        return decode_via_image(bytes, ImageKind::WebP, limits);
    };
    // Header dimensions first (the same checks `image` makes), nothing allocated for pixels.
    let (w, h) = image_reader(bytes, ImageKind::WebP, limits)
        .into_dimensions()
        .map_err(map_image_err)?;
    check_dims(u64::from(w), u64::from(h), limits)?;
    let frame = image_webp::vp8::Vp8Decoder::decode_frame(Cursor::new(chunk))
        .map_err(|_| ReadError::NotAnImage)?;
    let (fw, fh) = (usize::from(frame.width), usize::from(frame.height));
    if (fw, fh) != (w as usize, h as usize) {
        return Err(ReadError::NotAnImage);
    }
    let stride = fw.div_ceil(16) * 16;
    if frame.ybuf.len() < stride * (fh.max(1) - 1) + fw {
        return Err(ReadError::NotAnImage);
    }
    // VP8 luma is limited range (16..=235), as libwebp's YUV→RGB assumes: stretch to 0..=255.
    let lut: [u8; 256] =
        std::array::from_fn(|y| ((y.saturating_sub(16) * 255 + 109) / 219).min(255) as u8);
    let mut out = Vec::with_capacity(fw * fh);
    for row in frame.ybuf.chunks(stride).take(fh) {
        out.extend(row[..fw].iter().map(|&y| lut[usize::from(y)]));
    }
    GrayImage::from_raw(w, h, out).ok_or(ReadError::NotAnImage)
}

/// A PNG decoder that inflates nothing but the pixels: text chunks (`tEXt`, `zTXt`, `iTXt`) and
/// the colour profile (`iCCP`) are skipped unread (an `iCCP` of 1 MB inflated to the decoder's
/// limit, 320 MB, before), and what it still buffers whole (an `eXIf` chunk, raw, and the
/// small fixed-size chunks) is capped at twice the input.
fn png_decoder(bytes: &[u8]) -> png::Decoder<Cursor<&[u8]>> {
    let cap = bytes.len().saturating_mul(2).saturating_add(1 << 20);
    let mut dec = png::Decoder::new_with_limits(Cursor::new(bytes), png::Limits { bytes: cap });
    dec.set_ignore_text_chunk(true);
    dec.set_ignore_iccp_chunk(true);
    dec
}

/// Adam7's passes: (x offset, x step, y offset, y step).
const ADAM7: [(u64, u64, u64, u64); 7] = [
    (0, 8, 0, 8),
    (4, 8, 0, 8),
    (0, 4, 4, 8),
    (2, 4, 0, 4),
    (0, 2, 2, 4),
    (1, 2, 0, 2),
    (0, 1, 1, 2),
];

/// Rows the PNG decoder hands out for a `w`×`h` image: `h`, or the rows of the non-empty Adam7
/// passes. Reading exactly these (never asking for one more) stops before the decoder inflates
/// whatever follows the pixels in the zlib stream.
fn png_rows(w: u32, h: u32, interlaced: bool) -> u64 {
    if !interlaced {
        return u64::from(h);
    }
    let (w, h) = (u64::from(w), u64::from(h));
    ADAM7
        .iter()
        .filter(|&&(xo, xs, _, _)| w.saturating_sub(xo).div_ceil(xs) > 0)
        .map(|&(_, _, yo, ys)| h.saturating_sub(yo).div_ceil(ys))
        .sum()
}

/// A PNG → luma row by row (8-bit after expanding palettes and low bit depths and stripping
/// 16-bit to 8), interlaced or not: an Adam7 pass row is converted to luma, then placed in the
/// output, so no full-size RGB(A) buffer exists on any path.
fn decode_png_luma(bytes: &[u8], limits: &Limits) -> Result<GrayImage, ReadError> {
    let png_err = |e: png::DecodingError| match e {
        png::DecodingError::LimitsExceeded => ReadError::TooManyPixels,
        _ => ReadError::NotAnImage,
    };
    let mut dec = png_decoder(bytes);
    // Header only: nothing is allocated for pixels yet.
    let info = dec.read_header_info().map_err(png_err)?;
    let (w, h, interlaced) = (info.width, info.height, info.interlaced);
    check_dims(u64::from(w), u64::from(h), limits)?;
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().map_err(png_err)?;
    let bpp = match reader.output_color_type() {
        (png::ColorType::Grayscale, png::BitDepth::Eight) => 1,
        (png::ColorType::GrayscaleAlpha, png::BitDepth::Eight) => 2,
        (png::ColorType::Rgb, png::BitDepth::Eight) => 3,
        (png::ColorType::Rgba, png::BitDepth::Eight) => 4,
        // EXPAND and STRIP_16 leave only the four above.
        _ => return Err(ReadError::NotAnImage),
    };
    let (wu, hu) = (w as usize, h as usize);
    let mut out = vec![0u8; wu * hu];
    let mut pass_row = Vec::new();
    let mut y = 0;
    for _ in 0..png_rows(w, h, interlaced) {
        let row = reader
            .next_interlaced_row()
            .map_err(png_err)?
            .ok_or(ReadError::NotAnImage)?;
        let d = row.data();
        match row.interlace() {
            png::InterlaceInfo::Null(_) => {
                if d.len() < wu * bpp || y >= hu {
                    return Err(ReadError::NotAnImage);
                }
                row_luma(&d[..wu * bpp], bpp, &mut out[y * wu..][..wu]);
                y += 1;
            }
            png::InterlaceInfo::Adam7(pass) => {
                pass_row.resize(d.len() / bpp, 0);
                row_luma(d, bpp, &mut pass_row);
                png::expand_interlaced_row(&mut out, wu, &pass_row, pass, 8);
            }
        }
    }
    GrayImage::from_raw(w, h, out).ok_or(ReadError::NotAnImage)
}

/// One row of 8-bit pixels of `bpp` bytes (grey, grey + alpha, RGB, RGBA) into `out` as luma;
/// alpha is dropped, as `into_luma8` does.
fn row_luma(d: &[u8], bpp: usize, out: &mut [u8]) {
    match bpp {
        1 => out.copy_from_slice(&d[..out.len()]),
        2 => {
            for (o, p) in out.iter_mut().zip(d.chunks_exact(2)) {
                *o = p[0];
            }
        }
        _ => rgb_row_luma(d, bpp, out),
    }
}

/// A GIF's first frame → luma through a 256-entry palette table, placed on the logical screen
/// like `image` does (outside the frame: 0; transparent pixels keep their palette colour, as
/// `into_luma8` drops alpha).
fn decode_gif_luma(bytes: &[u8], limits: &Limits) -> Result<GrayImage, ReadError> {
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::Indexed);
    let mem = limits.max_pixels.saturating_mul(2).max(1 << 20);
    opts.set_memory_limit(gif::MemoryLimit::Bytes(
        std::num::NonZeroU64::new(mem).expect("non-zero"),
    ));
    let mut dec = opts
        .read_info(Cursor::new(bytes))
        .map_err(|_| ReadError::NotAnImage)?;
    let (w, h) = (usize::from(dec.width()), usize::from(dec.height()));
    let palette_lut = |palette: &[u8]| {
        let mut lut = [0u8; 256];
        for (l, c) in lut.iter_mut().zip(palette.chunks_exact(3)) {
            *l = luma709(c[0], c[1], c[2]);
        }
        lut
    };
    let global = dec.global_palette().map(palette_lut);
    // Frame header only, then its size checked too: nothing is allocated for pixels yet.
    let frame = dec
        .next_frame_info()
        .map_err(|_| ReadError::NotAnImage)?
        .ok_or(ReadError::NotAnImage)?;
    let (fw, fh) = (usize::from(frame.width), usize::from(frame.height));
    // Dimensions count only once the header and the first frame's header parse: a file that
    // merely starts with `GIF89a` declares "dimensions" from whatever bytes follow, and is not
    // an image, not an oversized one.
    check_dims(w as u64, h as u64, limits)?;
    check_dims(fw as u64, fh as u64, limits)?;
    let (left, top) = (usize::from(frame.left), usize::from(frame.top));
    let lut = match (&frame.palette, global) {
        (Some(p), _) => palette_lut(p),
        (None, Some(g)) => g,
        (None, None) => return Err(ReadError::NotAnImage),
    };
    let mut idx = vec![0u8; fw * fh];
    dec.read_into_buffer(&mut idx)
        .map_err(|_| ReadError::NotAnImage)?;
    let mut out = vec![0u8; w * h];
    if left < w && top < h {
        let cols = fw.min(w - left);
        for (y, row) in idx.chunks_exact(fw.max(1)).take(h - top).enumerate() {
            let dst = &mut out[(top + y) * w + left..][..cols];
            for (d, &i) in dst.iter_mut().zip(&row[..cols]) {
                *d = lut[usize::from(i)];
            }
        }
    }
    GrayImage::from_raw(w as u32, h as u32, out).ok_or(ReadError::NotAnImage)
}

fn image_reader<'a>(
    bytes: &'a [u8],
    kind: ImageKind,
    limits: &Limits,
) -> ImageReader<Cursor<&'a [u8]>> {
    let mut r = ImageReader::with_format(Cursor::new(bytes), kind.format());
    let mut l = image::Limits::default();
    // Belt and braces: the decoder itself refuses oversized buffers too.
    l.max_image_width = Some(limits.max_side);
    l.max_image_height = Some(limits.max_side);
    l.max_alloc = Some(limits.max_pixels.saturating_mul(8).max(1 << 20));
    r.limits(l);
    r
}

/// Any format through `image`, then one integer pass to luma (same Rec. 709 weights as
/// `image`'s `into_luma8`, which is several times slower than the PNG decode itself).
fn decode_via_image(
    bytes: &[u8],
    kind: ImageKind,
    limits: &Limits,
) -> Result<GrayImage, ReadError> {
    // Dimensions from the header only: nothing is allocated for pixels yet.
    let (w, h) = image_reader(bytes, kind, limits)
        .into_dimensions()
        .map_err(map_image_err)?;
    check_dims(u64::from(w), u64::from(h), limits)?;
    let decoded = image_reader(bytes, kind, limits)
        .decode()
        .map_err(map_image_err)?;
    Ok(to_luma(decoded))
}

/// One row of RGB (`bpp` 3) or RGBA (4) pixels into `out`, as [`luma709`]; an indexed loop
/// per pixel size, compiled again for AVX2, so it vectorises (the per-pixel `extend` was a
/// few percent of a read of a PNG screenshot).
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn rgb_row_luma(d: &[u8], bpp: usize, out: &mut [u8]) {
    if bpp == 3 {
        for (o, p) in out.iter_mut().zip(d.chunks_exact(3)) {
            *o = luma709(p[0], p[1], p[2]);
        }
    } else {
        for (o, p) in out.iter_mut().zip(d.chunks_exact(4)) {
            *o = luma709(p[0], p[1], p[2]);
        }
    }
}

/// Rec. 709 luma with `image`'s weights (2126, 7152, 722 / 10000) in 15-bit fixed point
/// (weights summing to 32768, so white stays 255); within 1 of `into_luma8`.
#[inline(always)]
fn luma709(r: u8, g: u8, b: u8) -> u8 {
    ((6966 * u32::from(r) + 23436 * u32::from(g) + 2366 * u32::from(b)) >> 15) as u8
}

fn to_luma(img: DynamicImage) -> GrayImage {
    let (w, h) = (img.width(), img.height());
    let out: Vec<u8> = match &img {
        DynamicImage::ImageRgb8(rgb) => rgb
            .as_raw()
            .chunks_exact(3)
            .map(|p| luma709(p[0], p[1], p[2]))
            .collect(),
        // Alpha is dropped, as `into_luma8` does.
        DynamicImage::ImageRgba8(rgba) => rgba
            .as_raw()
            .chunks_exact(4)
            .map(|p| luma709(p[0], p[1], p[2]))
            .collect(),
        _ => return img.into_luma8(),
    };
    GrayImage::from_raw(w, h, out).expect("buffer size matches")
}

fn map_image_err(e: image::ImageError) -> ReadError {
    match e {
        image::ImageError::Limits(_) => ReadError::TooManyPixels,
        _ => ReadError::NotAnImage,
    }
}

/// All QR texts found in the image, best first (duplicates removed).
pub fn read_qr(bytes: &[u8], limits: &Limits) -> Result<Vec<String>, ReadError> {
    read_qr_explained(bytes, limits).map(|(found, _)| found)
}

/// Like [`read_qr`], also naming the preprocessing strategy that succeeded (for benchmarks).
pub fn read_qr_explained(
    bytes: &[u8],
    limits: &Limits,
) -> Result<(Vec<String>, &'static str), ReadError> {
    read_with(bytes, strategies::Budget::new(limits), limits).0
}

/// Stage timings of one read: (stage, milliseconds) in order (decode, fit, each pass and
/// preparation); for benchmarks (`reader-bench --trace`).
#[doc(hidden)]
pub type Trace = Vec<(&'static str, f64)>;

/// Like [`read_qr_explained`], also returning where the time went.
#[doc(hidden)]
pub fn read_qr_traced(
    bytes: &[u8],
    limits: &Limits,
) -> (Result<(Vec<String>, &'static str), ReadError>, Trace) {
    read_with(bytes, strategies::Budget::new(limits).traced(), limits)
}

fn read_with(
    bytes: &[u8],
    mut budget: strategies::Budget,
    limits: &Limits,
) -> (Result<(Vec<String>, &'static str), ReadError>, Trace) {
    let res = read_inner(bytes, &mut budget, limits);
    let trace = budget
        .stages()
        .into_iter()
        .map(|(n, d)| (n, d.as_secs_f64() * 1e3))
        .collect();
    (res, trace)
}

fn read_inner(
    bytes: &[u8],
    budget: &mut strategies::Budget,
    limits: &Limits,
) -> Result<(Vec<String>, &'static str), ReadError> {
    let gray = decode_gray(bytes, limits)?;
    budget.mark("decode");
    let (found, name) = catch_unwind(AssertUnwindSafe(|| strategies::run_named(&gray, budget)))
        .unwrap_or((Vec::new(), "panic"));
    if found.is_empty() {
        Err(ReadError::NoQr)
    } else {
        Ok((found, name))
    }
}

/// What the evidence gate sees in a decoded image (on the working image the strategies see):
/// only when `qr_like` do the strategies after the two free passes run, so an image without
/// it fails after those passes; and only when `timing` too do the whole-image strategies after
/// the QR region's passes. For tests and benchmarks.
#[doc(hidden)]
pub fn finder_evidence(gray: &GrayImage) -> strategies::Evidence {
    strategies::finder_evidence_full(gray)
}

/// Every QR-region strategy (the preparations tried on the region the evidence gate's finders
/// span: thresholds, closing, upscales, the blur-and-upscale ones for thermal prints and
/// screens) on `crop` taken as a region of `module` px modules (clamped to 0.5–16), each
/// scanned as in a read; the texts found. For the image fuzz target only.
#[doc(hidden)]
pub fn read_as_qr_region(crop: &GrayImage, module: f32, low_contrast: bool) -> Vec<String> {
    let module = if module.is_finite() {
        module.clamp(0.5, 16.0)
    } else {
        4.0
    };
    catch_unwind(AssertUnwindSafe(|| {
        strategies::every_region_strategy(crop, module, low_contrast)
    }))
    .unwrap_or_default()
}

/// Test support shared by the unit tests: the shared corpus's slip images, sorted (empty when
/// the corpus is not beside the checkout).
#[cfg(test)]
pub(crate) fn corpus_images() -> Vec<std::path::PathBuf> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus/slips");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x != "json"))
        .collect();
    files.sort();
    files
}

/// Test support: the shared corpus's images and any folder in `JAVA_PORT_DIR` (e.g. a fresh
/// draw of `scripts/bench-hard-families`), decoded and at a read's working size (at most
/// 2400 px a side), each with its path; decoded one at a time as the caller goes.
#[cfg(test)]
pub(crate) fn working_images() -> impl Iterator<Item = (std::path::PathBuf, image::GrayImage)> {
    let mut files = corpus_images();
    if let Some(dir) = std::env::var_os("JAVA_PORT_DIR") {
        let mut more: Vec<_> = std::fs::read_dir(dir)
            .expect("JAVA_PORT_DIR")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x != "json"))
            .collect();
        more.sort();
        files.extend(more);
    }
    files.into_iter().filter_map(|p| {
        let bytes = std::fs::read(&p).expect("read image");
        let g = decode_gray(&bytes, &Limits::default()).ok()?;
        let f = g.width().max(g.height()).div_ceil(2400);
        let g = if f > 1 {
            image::imageops::resize(&g, g.width() / f, g.height() / f, image::imageops::Triangle)
        } else {
            g
        };
        Some((p, g))
    })
}

#[cfg(test)]
mod luma_path_tests {
    use super::*;

    fn corpus(name: &str) -> Option<Vec<u8>> {
        std::fs::read(format!(
            "{}/../../../shared/corpus/slips/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .ok()
    }

    /// Every direct-to-luma path refuses from the header, before decoding pixels.
    #[test]
    fn every_format_applies_the_pixel_limit() {
        let small = Limits {
            max_pixels: 10_000,
            ..Limits::default()
        };
        for name in [
            "slip-0000-clean.png",
            "slip-0001-jpeg.jpg",
            "slip-0005-webp.webp",
            "slip-0006-gif.gif",
        ] {
            let Some(bytes) = corpus(name) else { return };
            assert_eq!(
                decode_gray(&bytes, &small),
                Err(ReadError::TooManyPixels),
                "{name}"
            );
            assert!(decode_gray(&bytes, &Limits::default()).is_ok(), "{name}");
        }
    }

    #[test]
    fn jpeg_declaring_huge_dimensions_is_refused() {
        let Some(mut bytes) = corpus("slip-0001-jpeg.jpg") else {
            return;
        };
        let sof = bytes
            .windows(2)
            .position(|w| w == [0xFF, 0xC0] || w == [0xFF, 0xC2])
            .expect("SOF marker");
        // SOF: marker, length (2), precision (1), height (2), width (2).
        bytes[sof + 5..sof + 9].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
        assert_eq!(
            decode_gray(&bytes, &Limits::default()),
            Err(ReadError::TooManyPixels)
        );
    }

    #[test]
    fn gif_screen_or_frame_declaring_huge_dimensions_is_refused() {
        // A real GIF whose logical screen claims 65535×65535.
        if let Some(mut screen) = corpus("slip-0006-gif.gif") {
            screen[6..10].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
            assert_eq!(
                decode_gray(&screen, &Limits::default()),
                Err(ReadError::TooManyPixels)
            );
        }
        // 1×1 screen, but a 65535×65535 first frame with a 2-colour local palette.
        let mut frame = b"GIF89a".to_vec();
        frame.extend_from_slice(&[1, 0, 1, 0, 0, 0, 0]);
        frame.extend_from_slice(&[0x2C, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x80]);
        frame.extend_from_slice(&[0, 0, 0, 255, 255, 255]);
        frame.extend_from_slice(&[0x02, 0x02, 0x44, 0x01, 0x00, 0x3B]);
        assert!(matches!(
            decode_gray(&frame, &Limits::default()),
            Err(ReadError::TooManyPixels | ReadError::NotAnImage)
        ));
    }

    #[test]
    fn text_behind_a_gif_signature_is_not_an_image() {
        // 170 bytes: the signature, then text whose first bytes would read as a 8224×8224
        // logical screen; no frame follows, so it is not an image (not an oversized one).
        let mut g = b"GIF89a".to_vec();
        g.extend(std::iter::repeat_n(b' ', 164));
        assert_eq!(g.len(), 170);
        assert_eq!(
            decode_gray(&g, &Limits::default()),
            Err(ReadError::NotAnImage)
        );
    }

    #[test]
    fn gif_frame_smaller_than_screen_is_placed_on_black() {
        // 4×2 screen, global palette (black, white), a 2×1 white frame at (1, 1).
        let mut g = b"GIF89a".to_vec();
        g.extend_from_slice(&[4, 0, 2, 0, 0x80, 0, 0]);
        g.extend_from_slice(&[0, 0, 0, 255, 255, 255]);
        g.extend_from_slice(&[0x2C, 1, 0, 1, 0, 2, 0, 1, 0, 0x00]);
        // LZW, min code size 2: clear(4), 1, 1, end(5) → codes packed in 3 bits.
        g.extend_from_slice(&[0x02, 0x02, 0x4C, 0x0A, 0x00, 0x3B]);
        let img = decode_gray(&g, &Limits::default()).expect("decodes");
        assert_eq!(img.dimensions(), (4, 2));
        assert_eq!(img.as_raw(), &vec![0, 0, 0, 0, 0, 255, 255, 0]);
    }

    #[test]
    fn luma_weights_keep_black_and_white() {
        assert_eq!(luma709(255, 255, 255), 255);
        assert_eq!(luma709(0, 0, 0), 0);
        assert_eq!(luma709(0, 255, 0), 182);
    }
}

/// Crafted headers from the security probe (issue 17): tiny files declaring shapes that cost
/// gigabytes are refused from the header, on every format and in `decode_cost` alike.
#[cfg(test)]
mod shape_tests {
    use super::*;

    /// A grey 8-bit PNG of `w`×`h` whose pixels are all 0 (only small ones are built in full,
    /// big ones get a truncated stream: refusal is from IHDR).
    fn png(w: u32, h: u32, interlaced: bool) -> Vec<u8> {
        let zeros = if u64::from(w) * u64::from(h) <= 4_000_000 && !interlaced {
            (w as usize + 1) * h as usize
        } else {
            1024
        };
        crate::probe::png(w, h, interlaced, zeros)
    }

    fn refused(bytes: &[u8], what: &str) {
        let limits = Limits::default();
        assert_eq!(
            decode_cost(bytes, &limits),
            Err(ReadError::TooManyPixels),
            "{what}"
        );
        assert_eq!(
            decode_gray(bytes, &limits).map(|g| g.dimensions()),
            Err(ReadError::TooManyPixels),
            "{what}"
        );
    }

    #[test]
    fn probe_shapes_are_refused_from_the_header() {
        // Each under 40 MP, each gigabytes to decode and scan before this check.
        refused(&png(39_000_000, 1, false), "39,000,000×1");
        refused(&png(1, 39_000_000, false), "1×39,000,000");
        refused(&png(100, 399_000, false), "100×399,000");
        refused(&png(399_000, 100, true), "399,000×100 interlaced");
        // Under the side limit but too elongated.
        refused(&png(16_384, 600, false), "16384×600 (1:27)");
        // The side limit alone (square enough, few pixels would pass the count).
        let l = Limits {
            max_pixels: u64::MAX,
            ..Limits::default()
        };
        assert_eq!(
            check_dims(16_385, 16_385, &l),
            Err(ReadError::TooManyPixels)
        );
        assert_eq!(check_dims(16_384, 16_384, &l), Ok(()));
    }

    #[test]
    fn the_40_mp_rule_holds_on_every_path() {
        // PNG, plain and interlaced (the `image` path): 6400×6400 = 41 MP.
        refused(&png(6_400, 6_400, false), "png 41 MP");
        refused(&png(6_400, 6_400, true), "interlaced png 41 MP");
        // GIF: a 6400×6400 screen, or a 1×1 screen with a 6400×6400 first frame.
        let gif = |sw: u16, sh: u16, fw: u16, fh: u16| {
            let mut g = b"GIF89a".to_vec();
            g.extend_from_slice(&sw.to_le_bytes());
            g.extend_from_slice(&sh.to_le_bytes());
            g.extend_from_slice(&[0x80, 0, 0, 0, 0, 0, 255, 255, 255, 0x2C, 0, 0, 0, 0]);
            g.extend_from_slice(&fw.to_le_bytes());
            g.extend_from_slice(&fh.to_le_bytes());
            g.extend_from_slice(&[0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B]);
            g
        };
        refused(&gif(6_400, 6_400, 1, 1), "gif screen 41 MP");
        refused(&gif(1, 1, 6_400, 6_400), "gif frame 41 MP");
        refused(&gif(60_000, 2, 1, 1), "gif screen 60000×2");
        // A WebP file of one chunk `fourcc` holding `body`.
        let riff = |fourcc: &[u8; 4], body: &[u8]| {
            let mut out = b"RIFF".to_vec();
            out.extend_from_slice(&((body.len() + 12) as u32).to_le_bytes());
            out.extend_from_slice(b"WEBP");
            out.extend_from_slice(fourcc);
            out.extend_from_slice(&(body.len() as u32).to_le_bytes());
            out.extend_from_slice(body);
            out
        };
        // WebP lossless (VP8L): 14-bit sides, 6400×6400.
        let vp8l = |w: u32, h: u32| {
            let bits = (w - 1) | ((h - 1) << 14);
            let mut body = vec![0x2F];
            body.extend_from_slice(&bits.to_le_bytes());
            body.extend_from_slice(&[0; 8]);
            riff(b"VP8L", &body)
        };
        refused(&vp8l(6_400, 6_400), "webp lossless 41 MP");
        refused(&vp8l(16_000, 100), "webp lossless 16000×100");
        // WebP lossy (VP8): frame tag, start code, 14-bit sides.
        let vp8 = |w: u16, h: u16| {
            let mut body = vec![0x50, 0x02, 0x00, 0x9D, 0x01, 0x2A];
            body.extend_from_slice(&w.to_le_bytes());
            body.extend_from_slice(&h.to_le_bytes());
            body.extend_from_slice(&[0; 16]);
            riff(b"VP8 ", &body)
        };
        refused(&vp8(16_000, 16_000), "webp lossy 256 MP");
        refused(&vp8(16_000, 100), "webp lossy 16000×100");
        // JPEG: a real slip whose SOF is made to declare 6400×6400 (and 39,000×1,000).
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus/slips");
        if let Ok(real) = std::fs::read(format!("{dir}/slip-0001-jpeg.jpg")) {
            let sof = real
                .windows(2)
                .position(|w| w == [0xFF, 0xC0] || w == [0xFF, 0xC2])
                .expect("SOF marker");
            for (w, h) in [(6_400u16, 6_400u16), (39_000, 1_000)] {
                let mut j = real.clone();
                j[sof + 5..sof + 7].copy_from_slice(&h.to_be_bytes());
                j[sof + 7..sof + 9].copy_from_slice(&w.to_be_bytes());
                refused(&j, &format!("jpeg {w}×{h}"));
            }
        }
    }

    #[test]
    fn a_long_screenshot_inside_the_shape_limits_is_read_at_reduced_size() {
        // 1:25, the most elongated accepted: decoded, then scanned without any panic.
        let img = png(5_000, 200, false);
        let cost = decode_cost(&img, &Limits::default()).expect("admitted");
        assert!((1_000_000..20_000_000).contains(&cost), "{cost}");
        assert_eq!(
            decode_gray(&img, &Limits::default()).map(|g| g.dimensions()),
            Ok((5_000, 200))
        );
        assert_eq!(read_qr(&img, &Limits::default()), Err(ReadError::NoQr));
    }

    #[test]
    fn interlaced_pngs_cost_what_plain_ones_do() {
        // Both decode row by row to luma (issue 28): the same estimate but for the input.
        let (plain, interlaced) = (png(1_000, 1_000, false), png(1_000, 1_000, true));
        let cost = |b: &[u8]| decode_cost(b, &Limits::default()).unwrap() - b.len() as u64;
        assert_eq!(cost(&plain), cost(&interlaced));
        assert!(cost(&plain) < 10_000_000, "{}", cost(&plain));
    }
}

/// Where the time goes on the cheap first pass, per family (not part of the default run):
/// `cargo test --release -p reader --lib first_pass_timing -- --ignored --nocapture`
#[cfg(test)]
mod timing {
    use std::time::Instant;

    #[test]
    #[ignore]
    fn first_pass_timing() {
        let files = crate::corpus_images();
        let limits = super::Limits::default();
        let mut seen = std::collections::BTreeMap::<String, usize>::new();
        for p in files {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let fam = name.rsplit('-').next().unwrap().split('.').next().unwrap();
            let n = seen.entry(fam.to_string()).or_default();
            if *n >= 3 {
                continue;
            }
            *n += 1;
            let bytes = std::fs::read(&p).unwrap();
            let kind = super::sniff(&bytes).unwrap();
            let t = Instant::now();
            let img = image::load_from_memory_with_format(&bytes, kind.format()).unwrap();
            let t_img = t.elapsed();
            let t = Instant::now();
            let luma_old = img.into_luma8();
            let t_luma = t.elapsed();
            let t = Instant::now();
            let gray = super::decode_gray(&bytes, &limits).unwrap();
            let t_new = t.elapsed();
            let diff = if luma_old.dimensions() == gray.dimensions() {
                let d: u64 = luma_old
                    .iter()
                    .zip(gray.iter())
                    .map(|(&a, &b)| u64::from(a.abs_diff(b)))
                    .sum();
                d as f64 / luma_old.len() as f64
            } else {
                f64::NAN
            };
            let _ = kind;
            let t = Instant::now();
            let (found, how) =
                super::strategies::run_named(&gray, &mut super::strategies::Budget::new(&limits));
            let t_scan = t.elapsed();
            eprintln!(
                "{name:24} {:>4}x{:<4} image-decode {:6.1} into_luma8 {:5.1} decode_gray {:6.1} | scan {:6.1} ms ({how}, {}) ; mean |old-new| {diff:.2}",
                gray.width(),
                gray.height(),
                t_img.as_secs_f64() * 1e3,
                t_luma.as_secs_f64() * 1e3,
                t_new.as_secs_f64() * 1e3,
                t_scan.as_secs_f64() * 1e3,
                found.len(),
            );
        }
    }
}
