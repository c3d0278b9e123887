//! The image path: any bytes into the reader must end in a payload or a clean error — no
//! panic, and memory bounded by the limits (libFuzzer's -rss_limit_mb catches a blow-up).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Small limits keep each run fast; the checks are the same as in production.
    let limits = reader::Limits {
        max_bytes: 1 << 20,
        max_pixels: 4_000_000,
        ..reader::Limits::default()
    };
    // The admission estimate runs on the same bytes first, as in production.
    let _ = reader::decode_cost(data, &limits);
    if let Ok(texts) = reader::read_qr(data, &limits) {
        for t in texts {
            let _ = slip_qr::classify(&t);
        }
    }
    // Small images once more: the exhaustive scan (every strategy, whatever the evidence
    // gate says), and every QR-region strategy on the whole image taken as a region (they
    // run only behind finder patterns, which fuzzed bytes rarely show), with a module size
    // and contrast flag from the last byte.
    let small = reader::Limits {
        max_pixels: 250_000,
        scan_exhaustive: true,
        ..limits
    };
    let _ = reader::read_qr(data, &small);
    if let Ok(gray) = reader::decode_gray(data, &small) {
        let last = data.last().copied().unwrap_or(0);
        let module = 1.0 + f32::from(last & 31) / 4.0;
        let _ = reader::read_as_qr_region(&gray, module, last & 32 != 0);
    }
});
