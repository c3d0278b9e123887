//! Metadata bombs (issue 28 item 1): small files whose metadata inflates to a gigabyte, or
//! copies the whole input many times over. Each must decode (the QR still read) with the
//! memory `decode_cost` announced. Memory is counted by this binary's allocator, per thread
//! (tests run in parallel), as the peak of bytes held during the call: deterministic, no
//! timing.
//!
//! A separate test binary: its allocator counts nothing in the other tests.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

use reader::{decode_cost, decode_gray, read_qr, Limits};

#[path = "support/bombs.rs"]
mod bomb_builders;
use bomb_builders::{
    big_icc_segments, jpeg_with_segments, segment, tiny_icc_segments, webp_with_chunks,
    with_png_chunk, zlib_zeros,
};

struct Counting;

thread_local! {
    static HELD: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn add(n: usize) {
    let _ = HELD.try_with(|h| {
        let v = h.get() + n;
        h.set(v);
        let _ = PEAK.try_with(|p| p.set(p.get().max(v)));
    });
}

fn sub(n: usize) {
    let _ = HELD.try_with(|h| h.set(h.get().saturating_sub(n)));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        add(l.size());
        System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        add(l.size());
        System.alloc_zeroed(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        sub(l.size());
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        add(new);
        sub(l.size());
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The most bytes this thread held at once while `f` ran, above what it held before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = HELD.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let out = f();
    (out, PEAK.with(Cell::get) - before)
}

const PAYLOAD: &str = "0041000600000101030040220015123456789012345AB5102TH91049C3F";

/// A grey QR of `PAYLOAD`, `u` pixels a module, 4 modules of quiet zone: (width, pixels).
fn qr_pixels(u: usize) -> (usize, Vec<u8>) {
    let code = qrcode::QrCode::new(PAYLOAD.as_bytes()).expect("fits");
    let n = code.width();
    let side = (n + 8) * u;
    let mut px = vec![255u8; side * side];
    for (i, c) in code.to_colors().iter().enumerate() {
        if *c == qrcode::Color::Dark {
            let (mx, my) = (i % n + 4, i / n + 4);
            for y in my * u..(my + 1) * u {
                px[y * side + mx * u..y * side + (mx + 1) * u].fill(0);
            }
        }
    }
    (side, px)
}

fn qr_png() -> Vec<u8> {
    let (side, px) = qr_pixels(6);
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, side as u32, side as u32);
    enc.set_color(png::ColorType::Grayscale);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().expect("header");
    w.write_image_data(&px).expect("pixels");
    w.finish().expect("finish");
    out
}

/// Decodes `bytes` and reads its QR, asserting both stay within `decode_cost` (and within
/// `ceiling` bytes), and the QR is read; returns the decode's own peak.
fn decodes_within_cost(bytes: &[u8], ceiling: usize, what: &str) -> usize {
    let limits = Limits {
        scan_time: std::time::Duration::from_secs(60),
        ..Limits::default()
    };
    let cost = decode_cost(bytes, &limits).expect(what) as usize;
    let (gray, decode_peak) = peak_of(|| decode_gray(bytes, &limits));
    let gray = gray.unwrap_or_else(|e| panic!("{what}: {e:?}"));
    assert!(gray.width() > 0, "{what}");
    let (read, read_peak) = peak_of(|| read_qr(bytes, &limits));
    assert_eq!(read.as_deref(), Ok(&[PAYLOAD.to_string()][..]), "{what}");
    assert!(
        decode_peak.max(read_peak) <= cost,
        "{what}: peak {decode_peak} / {read_peak} B above the estimate {cost} B"
    );
    assert!(
        cost <= ceiling,
        "{what}: estimate {cost} B above {ceiling} B"
    );
    decode_peak
}

const MIB: usize = 1 << 20;

#[test]
fn png_compressed_metadata_is_never_inflated() {
    let base = qr_png();
    // 1 GiB once inflated, about 1 MB as sent: the probe's case and its relatives.
    let bomb = zlib_zeros(1024);
    let mut iccp = b"icc\0\0".to_vec();
    iccp.extend_from_slice(&bomb);
    let mut ztxt = b"Comment\0\0".to_vec();
    ztxt.extend_from_slice(&bomb);
    let mut itxt = b"Comment\0\x01\0\0\0".to_vec();
    itxt.extend_from_slice(&bomb);
    for (kind, data) in [(b"iCCP", &iccp), (b"zTXt", &ztxt), (b"iTXt", &itxt)] {
        let png = with_png_chunk(&base, kind, data);
        assert!(png.len() < 2 * MIB);
        // The QR image is 250 kpx: a decode and scan well under 16 MB, not 320 MB.
        let _ = decodes_within_cost(&png, 16 * MIB, std::str::from_utf8(kind).unwrap());
    }
}

#[test]
fn png_raw_metadata_is_counted() {
    let base = qr_png();
    // An eXIf chunk is kept raw by the decoder (it cannot skip it): counted, not refused.
    let exif = vec![7u8; 3 * MIB];
    let png = with_png_chunk(&base, b"eXIf", &exif);
    let _ = decodes_within_cost(&png, 24 * MIB, "eXIf");
    // Uncompressed text is skipped like the compressed kinds.
    let mut text = b"Comment\0".to_vec();
    text.extend_from_slice(&vec![b'a'; 3 * MIB]);
    let png = with_png_chunk(&base, b"tEXt", &text);
    let _ = decodes_within_cost(&png, 24 * MIB, "tEXt");
}

#[test]
fn interlaced_and_16_bit_pngs_decode_without_a_full_colour_buffer() {
    let (side, px) = qr_pixels(24);
    // 16-bit RGBA, Adam7: 8 bytes a pixel through `image` before.
    let rgba16: Vec<u8> = px
        .iter()
        .flat_map(|&v| [v, v, v, v, v, v, 255, 255])
        .collect();
    // Adam7's seven passes, a column each: x offset and step, y offset and step.
    let x_offsets = [0, 4, 0, 2, 0, 1, 0];
    let x_steps = [8, 8, 4, 4, 2, 2, 1];
    let y_offsets = [0, 0, 4, 0, 2, 0, 1];
    let y_steps = [8, 8, 8, 4, 4, 2, 2];
    let mut raw = Vec::new();
    let x_passes = x_offsets.into_iter().zip(x_steps);
    for ((xo, xs), (yo, ys)) in x_passes.zip(y_offsets.into_iter().zip(y_steps)) {
        for y in (yo..side).step_by(ys) {
            if xo >= side {
                break;
            }
            raw.push(0);
            for x in (xo..side).step_by(xs) {
                raw.extend_from_slice(&rgba16[(y * side + x) * 8..][..8]);
            }
        }
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&raw).unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = (side as u32).to_be_bytes().to_vec();
    ihdr.extend_from_slice(&(side as u32).to_be_bytes());
    ihdr.extend_from_slice(&[16, 6, 0, 0, 1]);
    reader::probe::png_chunk(&mut png, b"IHDR", &ihdr);
    reader::probe::png_chunk(&mut png, b"IDAT", &z.finish().unwrap());
    reader::probe::png_chunk(&mut png, b"IEND", &[]);
    let pixels = side * side;
    let decode = decodes_within_cost(&png, pixels * 8 + 2 * MIB, "16-bit RGBA Adam7");
    // The luma output and a few rows, not the 8 bytes a pixel of a 16-bit RGBA buffer.
    assert!(
        decode < pixels * 2 + MIB,
        "decode peak {decode} B for {pixels} px"
    );
}

/// A baseline JPEG of the QR (grey) with `segments` inserted after SOI.
fn qr_jpeg_with(segments: &[u8]) -> Vec<u8> {
    let (side, px) = qr_pixels(6);
    let size = (side as u32, side as u32);
    jpeg_with_segments(&px, size, image::ExtendedColorType::L8, segments)
}

#[test]
fn jpeg_metadata_segments_are_dropped_before_decoding() {
    // A 3.5 MB ICC profile in 56 full APP2 segments.
    let big = big_icc_segments(56);
    let _ = decodes_within_cost(&qr_jpeg_with(&big), 24 * MIB, "big ICC");
    // 120,000 tiny APP2 ICC chunks (one vector each in zune-jpeg), EXIF, XMP and extended-XMP
    // pieces (re-sorted after every marker) and comments.
    let mut many = tiny_icc_segments(120_000);
    for i in 0..15_000u32 {
        let mut d = b"http://ns.adobe.com/xmp/extension/\0".to_vec();
        d.extend_from_slice(&[b'G'; 32]);
        d.extend_from_slice(&u32::MAX.to_be_bytes());
        d.extend_from_slice(&(i * 4).to_be_bytes());
        d.extend_from_slice(b"xmp!");
        segment(&mut many, 0xE1, &d);
    }
    segment(
        &mut many,
        0xE1,
        &[b"Exif\0\0".as_slice(), &[0; 60_000]].concat(),
    );
    segment(&mut many, 0xFE, &[b'c'; 60_000]);
    let jpeg = qr_jpeg_with(&many);
    assert!(jpeg.len() < 4 * MIB);
    let _ = decodes_within_cost(&jpeg, 24 * MIB, "many APP segments");
}

/// A lossless WebP of the QR (grey as RGB), extended with `iccp` and `exif` chunks.
fn qr_webp_with(iccp: &[u8], exif: &[u8]) -> Vec<u8> {
    let (side, px) = qr_pixels(6);
    let rgb: Vec<u8> = px.iter().flat_map(|&v| [v, v, v]).collect();
    webp_with_chunks(&rgb, (side as u32, side as u32), iccp, exif)
}

#[test]
fn webp_metadata_chunks_are_never_read() {
    let webp = qr_webp_with(&vec![1u8; 2 * MIB], &vec![2u8; 3 * MIB / 2]);
    assert!(webp.len() < 4 * MIB);
    let _ = decodes_within_cost(&webp, 24 * MIB, "WebP ICCP + EXIF");
}

#[test]
fn gif_extensions_stay_within_the_estimate() {
    // A 2-colour GIF of the QR with a 3 MB ICC application extension and a 500 KB comment.
    let (side, px) = qr_pixels(6);
    let idx: Vec<u8> = px.iter().map(|&v| u8::from(v > 127)).collect();
    let mut out = Vec::new();
    {
        let mut enc = gif::Encoder::new(
            &mut out,
            side as u16,
            side as u16,
            &[0, 0, 0, 255, 255, 255],
        )
        .expect("gif");
        let frame = gif::Frame::from_indexed_pixels(side as u16, side as u16, idx, None);
        enc.write_frame(&frame).expect("frame");
    }
    let mut ext = vec![0x21, 0xFF, 11];
    ext.extend_from_slice(b"ICCRGBG1012");
    for _ in 0..(3 * MIB / 255) {
        ext.push(255);
        ext.extend_from_slice(&[9; 255]);
    }
    ext.push(0);
    ext.extend_from_slice(&[0x21, 0xFE]);
    for _ in 0..2_000 {
        ext.push(255);
        ext.extend_from_slice(&[b'c'; 255]);
    }
    ext.push(0);
    // After the header, logical screen descriptor and global palette (2 colours: 6 bytes).
    let at = 13 + 6;
    let gif = [&out[..at], &ext, &out[at..]].concat();
    let _ = decodes_within_cost(&gif, 24 * MIB, "GIF ICC + comment");
}
