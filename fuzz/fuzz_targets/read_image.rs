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
});
