//! `slipverify read PATH...`: the image reader from the command line, for trying images and
//! measuring the reader on a folder. Files are read on `--jobs` threads; results print in the
//! order of the paths.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

struct Outcome {
    file: String,
    payload: Option<String>,
    kind: Option<&'static str>,
    error: Option<String>,
    ms: f64,
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        entries.sort();
        for e in entries {
            collect(&e, out);
        }
    } else if is_image_name(path) {
        out.push(path.to_path_buf());
    }
}

/// In folders, only files named like images are read (a file named on the command line is
/// always read; its kind is decided by its bytes).
fn is_image_name(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        matches!(
            e.to_ascii_lowercase().as_str(),
            "jpg" | "jpeg" | "png" | "gif" | "webp"
        )
    })
}

fn read_one(path: &Path) -> Outcome {
    let start = Instant::now();
    let file = path.display().to_string();
    let result = std::fs::read(path)
        .map_err(|e| format!("cannot read: {e}"))
        .and_then(|bytes| {
            reader::read_qr(&bytes, &reader::Limits::default()).map_err(|e| e.to_string())
        });
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    match result {
        Err(error) => Outcome {
            file,
            payload: None,
            kind: None,
            error: Some(error),
            ms,
        },
        Ok(texts) => {
            // Prefer a bank slip; otherwise report the first QR and what it is.
            let best = texts
                .iter()
                .find(|t| slip_qr::parse_bank_slip(t).is_ok())
                .or(texts.first())
                .cloned();
            let kind = best.as_deref().map(|t| match slip_qr::classify(t) {
                Ok(slip_qr::ParsedQr::BankSlip(_)) => "bankSlip",
                Ok(slip_qr::ParsedQr::TrueMoneySlip(_)) => "trueMoneySlip",
                Ok(slip_qr::ParsedQr::PaymentQr(_)) => "paymentQr",
                Err(_) => "other",
            });
            Outcome {
                file,
                payload: best,
                kind,
                error: None,
                ms,
            }
        }
    }
}

/// Exit status 0 when every image gave a bank slip, 1 otherwise.
pub fn run(paths: &[PathBuf], jobs: Option<usize>, as_json: bool) -> ExitCode {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            collect(p, &mut files);
        } else {
            files.push(p.clone());
        }
    }
    let jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, 64);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(files.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(i) else { break };
                let outcome = read_one(path);
                if let Ok(mut r) = results.lock() {
                    r[i] = Some(outcome);
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    let mut all_slips = true;
    for o in results.into_iter().flatten() {
        all_slips &= o.kind == Some("bankSlip");
        if as_json {
            println!(
                "{}",
                json!({ "file": o.file, "payload": o.payload, "kind": o.kind, "error": o.error, "ms": (o.ms * 10.0).round() / 10.0 })
            );
        } else {
            let what = match (&o.payload, &o.error) {
                (Some(p), _) => format!("{} {p}", o.kind.unwrap_or("other")),
                (None, Some(e)) => format!("error: {e}"),
                (None, None) => "error: no QR code".to_string(),
            };
            println!("{}\t{what}\t{:.1} ms", o.file, o.ms);
        }
    }
    if all_slips {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
