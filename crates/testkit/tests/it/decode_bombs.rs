//! Issue 28 item 1: metadata bombs. A slip image whose metadata inflates to a gigabyte (PNG
//! `iCCP`, `zTXt`, `iTXt`) or copies the input many times (a PNG `eXIf`, a JPEG's ICC profile
//! and APP segments, a WebP's ICCP/EXIF) is decoded within the decode budget from its
//! header's estimate, and its slip QR still read: 8 at once, from two branches of one service.

use std::io::Write;

use serde_json::Value;
use testkit::{both, Backend, TestApp};

/// A zlib stream of `mib` MiB of zeros, about 1 KB a MiB (a sync-flushed deflate run of 1 MiB
/// of zeros, repeated: each copy refers only to zeros in the window).
fn zlib_zeros(mib: usize) -> Vec<u8> {
    let mut c = flate2::Compress::new(flate2::Compression::best(), false);
    let mut block = Vec::with_capacity(1 << 16);
    c.compress_vec(&vec![0u8; 1 << 20], &mut block, flate2::FlushCompress::Sync)
        .expect("deflate");
    let mut z = vec![0x78, 0xDA];
    for _ in 0..mib {
        z.extend_from_slice(&block);
    }
    // An empty final block, then the Adler-32 of the zeros.
    z.extend_from_slice(&[0x03, 0x00]);
    let b = ((mib as u64) << 20) % 65_521;
    z.extend_from_slice(&(((b as u32) << 16) | 1).to_be_bytes());
    z
}

/// `png` with a `kind` chunk holding `data` right after IHDR.
fn png_with(png: &[u8], kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = png[..33].to_vec();
    reader::probe::png_chunk(&mut out, kind, data);
    out.extend_from_slice(&png[33..]);
    out
}

fn segment(out: &mut Vec<u8>, marker: u8, data: &[u8]) {
    out.extend_from_slice(&[0xFF, marker]);
    out.extend_from_slice(&((data.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(data);
}

/// The slip PNG as a baseline JPEG with `segments` after SOI.
fn jpeg_with(png: &[u8], segments: &[u8]) -> Vec<u8> {
    let rgb = image::load_from_memory(png).unwrap().into_rgb8();
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
        .encode(
            rgb.as_raw(),
            rgb.width(),
            rgb.height(),
            image::ExtendedColorType::Rgb8,
        )
        .unwrap();
    [&jpeg[..2], segments, &jpeg[2..]].concat()
}

/// The slip PNG as an extended lossless WebP with `iccp` and `exif` chunks.
fn webp_with(png: &[u8], iccp: &[u8], exif: &[u8]) -> Vec<u8> {
    let rgb = image::load_from_memory(png).unwrap().into_rgb8();
    let mut plain = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut plain)
        .encode(
            rgb.as_raw(),
            rgb.width(),
            rgb.height(),
            image::ExtendedColorType::Rgb8,
        )
        .unwrap();
    let chunk = |out: &mut Vec<u8>, fourcc: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(fourcc);
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
        if data.len() % 2 == 1 {
            out.push(0);
        }
    };
    let mut body = b"WEBP".to_vec();
    let mut vp8x = vec![0x28, 0, 0, 0];
    vp8x.extend_from_slice(&(rgb.width() - 1).to_le_bytes()[..3]);
    vp8x.extend_from_slice(&(rgb.height() - 1).to_le_bytes()[..3]);
    chunk(&mut body, b"VP8X", &vp8x);
    chunk(&mut body, b"ICCP", iccp);
    body.extend_from_slice(&plain[12..]);
    chunk(&mut body, b"EXIF", exif);
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Every bomb built on the slip PNG `png`: (name, bytes).
fn bombs(png: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let gib = zlib_zeros(1024);
    let mut icc = Vec::new();
    for i in 0..54u8 {
        let mut d = b"ICC_PROFILE\0".to_vec();
        d.extend_from_slice(&[i + 1, 54]);
        d.extend_from_slice(&[0xAB; 65_000]);
        segment(&mut icc, 0xE2, &d);
    }
    let mut tiny = Vec::new();
    for i in 0..100_000u32 {
        segment(
            &mut tiny,
            0xE2,
            &[b"ICC_PROFILE\0".as_slice(), &[1, 255, i as u8]].concat(),
        );
    }
    let mut text = b"Comment\0".to_vec();
    text.write_all(&[b'a'; 1 << 20]).unwrap();
    vec![
        (
            "iCCP",
            png_with(png, b"iCCP", &[b"icc\0\0".as_slice(), &gib].concat()),
        ),
        (
            "zTXt",
            png_with(png, b"zTXt", &[b"Comment\0\0".as_slice(), &gib].concat()),
        ),
        (
            "iTXt",
            png_with(
                png,
                b"iTXt",
                &[b"Comment\0\x01\0\0\0".as_slice(), &gib].concat(),
            ),
        ),
        ("eXIf", png_with(png, b"eXIf", &vec![7u8; 3 << 20])),
        ("tEXt", png_with(png, b"tEXt", &text)),
        ("JPEG ICC", jpeg_with(png, &icc)),
        ("JPEG APP2 x 100,000", jpeg_with(png, &tiny)),
        (
            "WebP ICCP + EXIF",
            webp_with(png, &vec![1u8; 2 << 20], &vec![2u8; 1 << 20]),
        ),
    ]
}

both!(
    metadata_bombs_decode_within_the_budget_and_the_slip_is_read,
    |b: Backend| async move {
        let t = TestApp::spawn(b).await;
        let ten = t.tenant(1_000).await;
        let (_, key2) = t.branch(ten.service_id.clone(), "Second", None).await;
        let limits = t.app.services.image_limits();
        let budget_kib = t.app.services.decode_budget().available_kib();
        let mut sent = Vec::new();
        let tr = t.transfer("004", "014", 15_050).await;
        let slip = server::slip_image::png_bytes(&tr.payload, "004").unwrap();
        for (name, bytes) in bombs(&slip) {
            assert!(bytes.len() < 4 << 20, "{name}: {} B", bytes.len());
            // The estimate covers what is decoded: the pixels, not a gigabyte of metadata.
            let cost = reader::decode_cost(&bytes, &limits).unwrap();
            assert!(cost < 64 << 20, "{name}: estimated {cost} B");
            sent.push((name, bytes));
        }
        // 8 at once, alternating between the service's two branches.
        let t = &t;
        let mut answers = Vec::new();
        for (i, (name, bytes)) in sent.into_iter().enumerate() {
            let key = if i % 2 == 0 { &ten.api_key } else { &key2 };
            answers.push(async move {
                let (s, v): (u16, Value) =
                    t.upload("/v2/verify/bank", key, "image", bytes, &[]).await;
                (name, s, v)
            });
        }
        for (name, s, v) in futures_util::future::join_all(answers).await {
            assert_eq!(s, 200, "{name}: {v}");
            assert_eq!(
                v["data"]["rawSlip"]["transRef"], tr.trans_ref,
                "{name}: {v}"
            );
        }
        // Every admission was given back.
        assert_eq!(t.app.services.decode_budget().available_kib(), budget_kib);
    }
);
