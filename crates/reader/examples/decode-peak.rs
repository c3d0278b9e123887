//! Memory of one decode, for `scripts/bench-decode-memory`: reads one image file, then decodes
//! it (`decode`: `decode_gray`) or reads its QR (`read`: `read_qr`, decode and scan) with the
//! default limits, and prints one tab-separated line: width, height, `decode_cost`'s estimate
//! and the peak resident memory the call added (the kernel's high-water mark, reset just before
//! the call), both in bytes, then the outcome. Linux only (`/proc/self`).
//!
//! Usage: decode-peak FILE decode|read

fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("status field")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(mode)) = (args.first(), args.get(1)) else {
        eprintln!("usage: decode-peak FILE decode|read");
        std::process::exit(2);
    };
    let bytes = std::fs::read(path).expect("read the image");
    let limits = reader::Limits {
        // Decoding alone is measured: no time budget cutting the scan short.
        scan_time: std::time::Duration::from_secs(60),
        ..reader::Limits::default()
    };
    let cost = reader::decode_cost(&bytes, &limits);
    // Reset the high-water mark to the current RSS (input already read).
    std::fs::write("/proc/self/clear_refs", "5").expect("clear_refs");
    let base = status_kib("VmRSS:");
    let (dims, outcome) = match mode.as_str() {
        "decode" => match reader::decode_gray(&bytes, &limits) {
            Ok(g) => (g.dimensions(), "decoded".to_string()),
            Err(e) => ((0, 0), format!("{e:?}")),
        },
        "read" => match reader::read_qr(&bytes, &limits) {
            Ok(t) => ((0, 0), format!("{} QR", t.len())),
            Err(e) => ((0, 0), format!("{e:?}")),
        },
        _ => panic!("mode: decode or read"),
    };
    let peak = status_kib("VmHWM:").saturating_sub(base) * 1024;
    let cost = cost.map_or_else(|e| format!("{e:?}"), |c| c.to_string());
    println!("{}\t{}\t{cost}\t{peak}\t{outcome}", dims.0, dims.1);
}
