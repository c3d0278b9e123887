//! Issue 28 item 1: metadata bombs. A slip image whose metadata inflates to a gigabyte (PNG
//! `iCCP`, `zTXt`, `iTXt`) or copies the input many times (a PNG `eXIf`, a JPEG's ICC profile
//! and APP segments, a WebP's ICCP/EXIF) is decoded within the decode budget from its
//! header's estimate, and its slip QR still read: 8 at once, from two branches of one service.

use std::io::Write;

use serde_json::Value;
use testkit::{both, Backend, TestApp};

// Shared by path with the reader's own test, which uses all of it; this one leaves `segment`.
#[allow(dead_code)]
#[path = "../../../reader/tests/support/bombs.rs"]
mod bomb_builders;
use bomb_builders::{
    big_icc_segments, jpeg_with_segments, tiny_icc_segments, webp_with_chunks, with_png_chunk,
    zlib_zeros,
};

/// The slip PNG as RGB pixels and its size.
fn rgb_of(png: &[u8]) -> (Vec<u8>, (u32, u32)) {
    let rgb = image::load_from_memory(png).unwrap().into_rgb8();
    let size = rgb.dimensions();
    (rgb.into_raw(), size)
}

/// The slip PNG as a baseline JPEG with `segments` after SOI.
fn jpeg_with(png: &[u8], segments: &[u8]) -> Vec<u8> {
    let (rgb, size) = rgb_of(png);
    jpeg_with_segments(&rgb, size, image::ExtendedColorType::Rgb8, segments)
}

/// The slip PNG as an extended lossless WebP with `iccp` and `exif` chunks.
fn webp_with(png: &[u8], iccp: &[u8], exif: &[u8]) -> Vec<u8> {
    let (rgb, size) = rgb_of(png);
    webp_with_chunks(&rgb, size, iccp, exif)
}

/// Every bomb built on the slip PNG `png`: (name, bytes).
fn bombs(png: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let gib = zlib_zeros(1024);
    let icc = big_icc_segments(54);
    let tiny = tiny_icc_segments(100_000);
    let mut text = b"Comment\0".to_vec();
    text.write_all(&[b'a'; 1 << 20]).unwrap();
    vec![
        (
            "iCCP",
            with_png_chunk(png, b"iCCP", &[b"icc\0\0".as_slice(), &gib].concat()),
        ),
        (
            "zTXt",
            with_png_chunk(png, b"zTXt", &[b"Comment\0\0".as_slice(), &gib].concat()),
        ),
        (
            "iTXt",
            with_png_chunk(
                png,
                b"iTXt",
                &[b"Comment\0\x01\0\0\0".as_slice(), &gib].concat(),
            ),
        ),
        ("eXIf", with_png_chunk(png, b"eXIf", &vec![7u8; 3 << 20])),
        ("tEXt", with_png_chunk(png, b"tEXt", &text)),
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
