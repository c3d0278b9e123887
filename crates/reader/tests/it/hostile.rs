//! Hostile / malformed input: every case returns an error, none panics or allocates big.

use reader::{read_qr, sniff, ImageKind, Limits, ReadError};

/// A valid-looking PNG header declaring `w`×`h` 8-bit grayscale, with a tiny IDAT (4 zero
/// bytes: far fewer than w*h would need).
fn png_declaring(w: u32, h: u32) -> Vec<u8> {
    reader::probe::png(w, h, false, 4)
}

#[test]
fn decompression_bomb_is_refused_from_the_header() {
    let bomb = png_declaring(20_000, 20_000);
    assert!(bomb.len() < 100);
    assert_eq!(
        read_qr(&bomb, &Limits::default()),
        Err(ReadError::TooManyPixels)
    );
}

#[test]
fn small_declared_png_with_short_data_is_not_an_image() {
    // Same shape as the bomb but within limits: the IDAT is too short, so decoding fails.
    let png = png_declaring(64, 64);
    assert_eq!(
        read_qr(&png, &Limits::default()),
        Err(ReadError::NotAnImage)
    );
}

#[test]
fn garbage_is_not_an_image() {
    let garbage: Vec<u8> = (0..10_000u32).map(|i| (i * 7919 % 251) as u8).collect();
    assert_eq!(
        read_qr(&garbage, &Limits::default()),
        Err(ReadError::NotAnImage)
    );
    assert_eq!(read_qr(&[], &Limits::default()), Err(ReadError::NotAnImage));
}

fn corpus_file(name: &str) -> Vec<u8> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus/slips");
    std::fs::read(format!("{dir}/{name}")).expect("corpus file")
}

/// The corpus's clean sample slip, read under `limits`.
fn read_clean_slip(limits: &Limits) -> Result<Vec<String>, ReadError> {
    read_qr(&corpus_file("slip-0000-clean.png"), limits)
}

#[test]
fn truncated_images_are_not_images() {
    for name in [
        "slip-0000-clean.png",
        "slip-0001-jpeg.jpg",
        "slip-0005-webp.webp",
        "slip-0006-gif.gif",
    ] {
        let full = corpus_file(name);
        for cut in [16, 100, full.len() / 3] {
            let r = read_qr(&full[..cut], &Limits::default());
            assert!(
                matches!(r, Err(ReadError::NotAnImage) | Err(ReadError::NoQr)),
                "{name} cut at {cut}: {r:?}"
            );
        }
    }
    // A PNG truncated mid-IDAT must be a decode error, not a partial image.
    let png = corpus_file("slip-0000-clean.png");
    assert_eq!(
        read_qr(&png[..png.len() / 2], &Limits::default()),
        Err(ReadError::NotAnImage)
    );
}

#[test]
fn oversize_is_too_large() {
    let limits = Limits {
        max_bytes: 1000,
        ..Limits::default()
    };
    assert_eq!(read_clean_slip(&limits), Err(ReadError::TooLarge));
    // Size is checked before anything else, even for garbage.
    assert_eq!(read_qr(&[0u8; 1001], &limits), Err(ReadError::TooLarge));
}

#[test]
fn pixel_limit_applies_to_real_images() {
    let got = read_clean_slip(&Limits {
        max_pixels: 100_000,
        ..Limits::default()
    });
    assert_eq!(got, Err(ReadError::TooManyPixels));
}

#[test]
fn sniff_table() {
    let cases: &[(&[u8], Option<ImageKind>)] = &[
        (b"\xFF\xD8\xFF\xE0\x00\x10JFIF", Some(ImageKind::Jpeg)),
        (b"\x89PNG\r\n\x1a\n\x00\x00", Some(ImageKind::Png)),
        (b"GIF87a\x01\x00", Some(ImageKind::Gif)),
        (b"GIF89a\x01\x00", Some(ImageKind::Gif)),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", Some(ImageKind::WebP)),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", None),
        (b"\x89PNG\r\n", None),
        (b"GIF88a", None),
        (b"BM\x00\x00", None),
        (b"<svg xmlns=", None),
        (b"%PDF-1.7", None),
        (b"", None),
    ];
    for (bytes, want) in cases {
        assert_eq!(sniff(bytes), *want, "{bytes:?}");
    }
}

#[test]
fn image_without_qr_is_no_qr() {
    // A plain white 64×64 grayscale PNG, built with the image crate.
    let img = image::GrayImage::from_pixel(64, 64, image::Luma([255]));
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    assert_eq!(read_qr(&png, &Limits::default()), Err(ReadError::NoQr));
}
