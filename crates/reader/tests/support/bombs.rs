//! Builders of metadata-bomb images (issue 28 item 1), shared by the reader's own
//! `decode_bombs` test and the HTTP one in `testkit` (which includes this file by path): the
//! same bytes checked against the decoder's estimate and against the service's budget.

/// A zlib stream of `mib` MiB of zeros, about 1 KB per MiB: one sync-flushed deflate block
/// sequence repeated (each copy refers only to zeros within the window), then an empty final
/// block and the Adler-32 of the zeros.
pub fn zlib_zeros(mib: usize) -> Vec<u8> {
    let mut c = flate2::Compress::new(flate2::Compression::best(), false);
    let mut block = Vec::with_capacity(1 << 16);
    c.compress_vec(&vec![0u8; 1 << 20], &mut block, flate2::FlushCompress::Sync)
        .expect("deflate");
    let mut z = vec![0x78, 0xDA];
    for _ in 0..mib {
        z.extend_from_slice(&block);
    }
    z.extend_from_slice(&[0x03, 0x00]);
    let b = ((mib as u64) << 20) % 65_521;
    z.extend_from_slice(&(((b as u32) << 16) | 1).to_be_bytes());
    z
}

/// `png` with a `kind` chunk holding `data` right after IHDR.
pub fn with_png_chunk(png: &[u8], kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = png[..33].to_vec();
    reader::probe::png_chunk(&mut out, kind, data);
    out.extend_from_slice(&png[33..]);
    out
}

/// Appends a JPEG marker segment (`FF marker`, length, `data`).
pub fn segment(out: &mut Vec<u8>, marker: u8, data: &[u8]) {
    out.extend_from_slice(&[0xFF, marker]);
    out.extend_from_slice(&((data.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(data);
}

/// An ICC profile of `n` APP2 segments of 65,000 bytes each: megabytes of metadata.
pub fn big_icc_segments(n: u8) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let mut d = b"ICC_PROFILE\0".to_vec();
        d.extend_from_slice(&[i + 1, n]);
        d.extend_from_slice(&vec![0xAB; 65_000]);
        segment(&mut out, 0xE2, &d);
    }
    out
}

/// `n` tiny APP2 ICC chunks: one allocation each in a decoder that keeps them.
pub fn tiny_icc_segments(n: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        segment(
            &mut out,
            0xE2,
            &[b"ICC_PROFILE\0".as_slice(), &[1, 255, i as u8]].concat(),
        );
    }
    out
}

/// A baseline JPEG (quality 90) of `pixels`, through `image`'s encoder, with `segments`
/// inserted after SOI.
pub fn jpeg_with_segments(
    pixels: &[u8],
    (width, height): (u32, u32),
    color: image::ExtendedColorType,
    segments: &[u8],
) -> Vec<u8> {
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
        .encode(pixels, width, height, color)
        .expect("jpeg");
    [&jpeg[..2], segments, &jpeg[2..]].concat()
}

/// A lossless WebP of the RGB `pixels`, through `image`'s encoder, wrapped as an extended
/// WebP with `iccp` and `exif` chunks around its `VP8L` chunk.
pub fn webp_with_chunks(
    rgb: &[u8],
    (width, height): (u32, u32),
    iccp: &[u8],
    exif: &[u8],
) -> Vec<u8> {
    let mut plain = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut plain)
        .encode(rgb, width, height, image::ExtendedColorType::Rgb8)
        .expect("webp");
    let vp8l = &plain[12..];
    let chunk = |out: &mut Vec<u8>, fourcc: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(fourcc);
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
        if data.len() % 2 == 1 {
            out.push(0);
        }
    };
    let mut body = b"WEBP".to_vec();
    // Flags: ICC profile (0x20) and EXIF (0x08); then the canvas size less one.
    let mut vp8x = vec![0x20 | 0x08, 0, 0, 0];
    vp8x.extend_from_slice(&(width - 1).to_le_bytes()[..3]);
    vp8x.extend_from_slice(&(height - 1).to_le_bytes()[..3]);
    chunk(&mut body, b"VP8X", &vp8x);
    chunk(&mut body, b"ICCP", iccp);
    body.extend_from_slice(vp8l);
    chunk(&mut body, b"EXIF", exif);
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out
}
