//! Slip image bytes → QR payload text.
//!
//! Pure and synchronous: no I/O besides the bytes handed in. Hostile input is expected, so
//! the size is checked before anything else, the image kind is sniffed from magic bytes, the
//! pixel count is read from the header and refused *before* any pixel buffer is allocated
//! (decompression bombs), and decoder panics are contained.
//!
//! QR detection uses two pure-Rust decoders: `rxing` (a zxing port, the strong one) and `rqrr`
//! as a fallback on the same image, over a short list of preprocessing strategies (plain,
//! inverted for dark mode, 2×2 average for noisy photos, ×2 upscale for thumbnails, local-mean
//! and Otsu thresholds, a closing for speckled thermal prints), stopping at the first one that
//! yields a QR code.

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use image::{GrayImage, ImageFormat, ImageReader};

mod strategies;

/// Input limits applied before decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted input, in bytes.
    pub max_bytes: usize,
    /// Largest accepted width × height, read from the header before decoding.
    pub max_pixels: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 4 * 1024 * 1024,
            max_pixels: 40_000_000,
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
pub fn decode_gray(bytes: &[u8], limits: &Limits) -> Result<GrayImage, ReadError> {
    if bytes.len() > limits.max_bytes {
        return Err(ReadError::TooLarge);
    }
    let kind = sniff(bytes).ok_or(ReadError::NotAnImage)?;
    let reader = || {
        let mut r = ImageReader::with_format(Cursor::new(bytes), kind.format());
        let mut l = image::Limits::default();
        // Belt and braces: the decoder itself refuses oversized buffers too.
        let side = u32::try_from(limits.max_pixels).unwrap_or(u32::MAX);
        l.max_image_width = Some(side);
        l.max_image_height = Some(side);
        l.max_alloc = Some(limits.max_pixels.saturating_mul(8).max(1 << 20));
        r.limits(l);
        r
    };
    // Dimensions from the header only: nothing is allocated for pixels yet.
    let (w, h) = reader().into_dimensions().map_err(map_image_err)?;
    if w == 0 || h == 0 {
        return Err(ReadError::NotAnImage);
    }
    if u64::from(w) * u64::from(h) > limits.max_pixels {
        return Err(ReadError::TooManyPixels);
    }
    let decoded = catch_unwind(AssertUnwindSafe(|| reader().decode()))
        .map_err(|_| ReadError::NotAnImage)?
        .map_err(map_image_err)?;
    Ok(decoded.into_luma8())
}

fn map_image_err(e: image::ImageError) -> ReadError {
    match e {
        image::ImageError::Limits(_) => ReadError::TooManyPixels,
        _ => ReadError::NotAnImage,
    }
}

/// All QR texts found in the image, best first (duplicates removed).
pub fn read_qr(bytes: &[u8], limits: &Limits) -> Result<Vec<String>, ReadError> {
    let gray = decode_gray(bytes, limits)?;
    let found = catch_unwind(AssertUnwindSafe(|| strategies::run(&gray))).unwrap_or_default();
    if found.is_empty() {
        Err(ReadError::NoQr)
    } else {
        Ok(found)
    }
}

/// Like [`read_qr`], also naming the preprocessing strategy that succeeded (for benchmarks).
pub fn read_qr_explained(
    bytes: &[u8],
    limits: &Limits,
) -> Result<(Vec<String>, &'static str), ReadError> {
    let gray = decode_gray(bytes, limits)?;
    let (found, name) = catch_unwind(AssertUnwindSafe(|| strategies::run_named(&gray)))
        .unwrap_or((Vec::new(), "panic"));
    if found.is_empty() {
        Err(ReadError::NoQr)
    } else {
        Ok((found, name))
    }
}
