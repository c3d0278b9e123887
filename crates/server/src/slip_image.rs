//! A simple e-slip picture carrying a slip QR, so image inputs can be tried with sandbox
//! transfers. It has no text (no font is bundled): a coloured header, the QR, and margins.

use image::{Rgb, RgbImage};
use qrcode::{Color, EcLevel, QrCode};
use std::path::Path;

const SCALE: u32 = 8;
const QUIET: u32 = 4;

pub fn write_png(payload: &str, bank_code: &str, path: &Path) -> anyhow::Result<()> {
    let bytes = png_bytes(payload, bank_code)?;
    std::fs::write(path, bytes).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// The slip picture as PNG bytes.
pub fn png_bytes(payload: &str, bank_code: &str) -> anyhow::Result<Vec<u8>> {
    let code = QrCode::with_error_correction_level(payload.as_bytes(), EcLevel::M)
        .map_err(|e| anyhow::anyhow!("cannot encode QR: {e}"))?;
    let w = code.width() as u32;
    let qr_px = (w + 2 * QUIET) * SCALE;
    let (width, height) = (qr_px + 160, qr_px + 420);
    let mut img = RgbImage::from_pixel(width, height, Rgb([255, 255, 255]));
    let header = header_colour(bank_code);
    for y in 0..120 {
        for x in 0..width {
            img.put_pixel(x, y, header);
        }
    }
    // Grey lines stand in for the slip's text rows.
    for row in 0..4u32 {
        let y0 = 160 + row * 40;
        for y in y0..y0 + 12 {
            for x in 80..width - 80 - row * 60 {
                img.put_pixel(x, y, Rgb([200, 200, 200]));
            }
        }
    }
    let (ox, oy) = (80, 340);
    let colors = code.to_colors();
    for (i, c) in colors.iter().enumerate() {
        if *c == Color::Dark {
            let (mx, my) = (
                (i as u32 % w + QUIET) * SCALE,
                (i as u32 / w + QUIET) * SCALE,
            );
            for dy in 0..SCALE {
                for dx in 0..SCALE {
                    img.put_pixel(ox + mx + dx, oy + my + dy, Rgb([0, 0, 0]));
                }
            }
        }
    }
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .map_err(|e| anyhow::anyhow!("cannot encode PNG: {e}"))?;
    Ok(out.into_inner())
}

fn header_colour(bank: &str) -> Rgb<u8> {
    match bank {
        "002" => Rgb([30, 70, 160]),
        "004" => Rgb([0, 150, 70]),
        "006" => Rgb([0, 160, 220]),
        "014" => Rgb([80, 40, 130]),
        "025" => Rgb([250, 200, 0]),
        _ => Rgb([90, 90, 90]),
    }
}
