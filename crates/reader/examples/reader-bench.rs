//! Benchmark: decode every corpus image single-threaded, print per-family decoded/total and
//! median ms per image (image decoding included, like qr_anchor.py). Writes nothing to disk.
//!
//! Usage: reader-bench [CORPUS_DIR] [--verbose] [--trace] [--json OUT] [--scan-ms N]
//!        [--scan-passes N] [--exhaustive]
//!
//! `--trace` prints, per image, where its time went (decode, each pass and preparation, ms).
//!
//! `reader-bench --serve [--scan-ms N] [--scan-passes N]` reads one image path per line on
//! stdin and answers each with one JSON line `{"texts": [...], "ms": …, "how": …}` (the read
//! alone timed, as for a folder), so `scripts/reader-compare.py` can run ours, zxing-cpp and
//! WeChat's reader on each image in turn: the three see the same load at the same moment.
//! `--json` writes `{file: {ok, ms, how, texts}}` for `scripts/reader-compare.py` (and for
//! comparing two builds' answers image by image); `--scan-ms` and
//! `--scan-passes` override the reader's default scan budget (`reader::Limits`); `--exhaustive`
//! reads with `Limits::scan_exhaustive` (no evidence gate, no budget).

use std::collections::BTreeMap;
use std::time::Instant;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let verbose = args.iter().any(|a| a == "--verbose");
    let trace = args.iter().any(|a| a == "--trace");
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let json_out = opt("--json");
    let mut limits = reader::Limits::default();
    if let Some(ms) = opt("--scan-ms") {
        limits.scan_time = std::time::Duration::from_millis(ms.parse().expect("--scan-ms N"));
    }
    if let Some(n) = opt("--scan-passes") {
        limits.scan_passes = n.parse().expect("--scan-passes N");
    }
    limits.scan_exhaustive = args.iter().any(|a| a == "--exhaustive");
    if args.iter().any(|a| a == "--serve") {
        serve(&limits);
        return;
    }
    let values: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            let is_option_value = *i > 0
                && matches!(
                    args[i - 1].as_str(),
                    "--json" | "--scan-ms" | "--scan-passes"
                );
            !a.starts_with("--") && !is_option_value
        })
        .map(|(_, a)| a)
        .collect();
    let dir = values.first().map(|s| s.to_string()).unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus/slips").to_string()
    });
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(format!("{dir}/manifest.json")).expect("read manifest.json"),
    )
    .expect("parse manifest.json");
    let mut per: BTreeMap<String, (usize, usize, Vec<f64>)> = BTreeMap::new();
    let mut strategies: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut all = Vec::new();
    let mut records = serde_json::Map::new();
    for m in manifest.as_array().expect("manifest is an array") {
        let file = m["file"].as_str().expect("file");
        let payload = m["payload"].as_str().expect("payload");
        let family = m["family"].as_str().expect("family");
        let bytes = std::fs::read(format!("{dir}/{file}")).expect("read image");
        let t = Instant::now();
        let (res, stages) = if trace {
            reader::read_qr_traced(&bytes, &limits)
        } else {
            (reader::read_qr_explained(&bytes, &limits), Vec::new())
        };
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let ok = matches!(&res, Ok((texts, _)) if texts.iter().any(|x| x == payload));
        if let Ok((_, s)) = &res {
            if ok {
                *strategies.entry(s).or_default() += 1;
            }
        }
        let how = match &res {
            Ok((_, s)) => s.to_string(),
            Err(e) => format!("{e:?}"),
        };
        if verbose {
            eprintln!("{file:28} {family:6} {ok:5} {how:12} {ms:8.1} ms");
        }
        if trace {
            let s: Vec<String> = stages
                .iter()
                .map(|(n, ms)| format!("{n} {ms:.1}"))
                .collect();
            eprintln!("{file:28} {ms:8.1} ms: {}", s.join(", "));
        }
        let texts: Vec<String> = match &res {
            Ok((texts, _)) => texts.clone(),
            Err(_) => Vec::new(),
        };
        records.insert(
            file.to_string(),
            serde_json::json!({"ok": ok, "ms": ms, "how": how, "texts": texts}),
        );
        let e = per.entry(family.to_string()).or_default();
        e.0 += usize::from(ok);
        e.1 += 1;
        e.2.push(ms);
        all.push(ms);
    }
    let (mut tot, mut n) = (0, 0);
    for (fam, (k, c, ts)) in per.iter_mut() {
        println!("{fam:8} {k:4}/{c:<4} median {:7.1} ms", median(ts));
        tot += *k;
        n += *c;
    }
    let total: f64 = all.iter().sum::<f64>() / 1000.0;
    println!(
        "reader (rxing+rqrr): decoded {tot}/{n} ({:.1}%), median {:.1} ms, total {total:.2} s",
        100.0 * tot as f64 / n.max(1) as f64,
        median(&mut all)
    );
    let s: Vec<String> = strategies.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("winning strategy: {}", s.join(" "));
    if let Some(path) = json_out {
        std::fs::write(path, serde_json::Value::Object(records).to_string()).expect("write --json");
    }
}

/// One image path per stdin line → one JSON line on stdout, until stdin closes.
fn serve(limits: &reader::Limits) {
    use std::io::{BufRead, Write};
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let path = line.expect("read stdin");
        let bytes = std::fs::read(path.trim()).expect("read image");
        let t = Instant::now();
        let res = reader::read_qr_explained(&bytes, limits);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let (texts, how) = match res {
            Ok((texts, how)) => (texts, how.to_string()),
            Err(e) => (Vec::new(), format!("{e:?}")),
        };
        let answer = serde_json::json!({"texts": texts, "ms": ms, "how": how});
        writeln!(out, "{answer}").expect("write stdout");
        out.flush().expect("flush stdout");
    }
}
