//! `slipverify read PATH...`: the image reader from the command line, for trying images and
//! measuring the reader on a folder. Files are read on `--jobs` threads; results print in the
//! order of the paths. With more than one file and stderr on a terminal, a one-line counter
//! on stderr shows how far the reading is (see [`Progress`]); stdout only ever gets results.

use serde_json::json;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

fn read_one(path: &Path, limits: &reader::Limits) -> Outcome {
    let start = Instant::now();
    let file = path.display().to_string();
    let result = std::fs::read(path)
        .map_err(|e| format!("cannot read: {e}"))
        .and_then(|bytes| reader::read_qr(&bytes, limits).map_err(|e| e.to_string()));
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

/// How often the progress line is redrawn at most.
const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// `reading 37/120 images (30 %), 12.3/s, about 7 s left`, redrawn in place on stderr with
/// `\r` and erase-to-end-of-line, and erased when the reading is done, before any result is
/// printed (results go to stdout only after every file is read, so the two never interleave).
///
/// Hand-written rather than a progress-bar crate: one counter line needs no dependency tree
/// (no new crates in the lock file, nothing more to build on two cores), and the only
/// terminal feature used is `\r` plus `ESC[K`.
struct Progress {
    total: usize,
    done: AtomicUsize,
    start: Instant,
    /// `None` when disabled (stderr not a terminal, or a single file). The instant is the last
    /// redraw.
    sink: Option<Mutex<(Box<dyn Write + Send>, Instant)>>,
}

impl Progress {
    /// Shown only when stderr is a terminal and there is more than one file.
    fn for_stderr(total: usize) -> Self {
        let on = total > 1 && std::io::stderr().is_terminal();
        Self::new(
            total,
            on.then(|| Box::new(std::io::stderr()) as Box<dyn Write + Send>),
        )
    }

    fn new(total: usize, sink: Option<Box<dyn Write + Send>>) -> Self {
        let start = Instant::now();
        let p = Progress {
            total,
            done: AtomicUsize::new(0),
            start,
            sink: sink.map(|w| Mutex::new((w, start))),
        };
        p.draw(0, true);
        p
    }

    /// One more file read.
    fn tick(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        self.draw(done, done == self.total);
    }

    fn draw(&self, done: usize, force: bool) {
        let Some(sink) = &self.sink else { return };
        let Ok(mut guard) = sink.lock() else { return };
        let (out, last) = &mut *guard;
        let now = Instant::now();
        if !force && now.duration_since(*last) < REDRAW_EVERY {
            return;
        }
        *last = now;
        let line = progress_line(done, self.total, now.duration_since(self.start));
        // A terminal that went away is no reason to stop reading.
        let _ = write!(out, "\r{line}\x1b[K");
        let _ = out.flush();
    }

    /// Erases the line.
    fn finish(&self) {
        if let Some(Ok(mut guard)) = self.sink.as_ref().map(Mutex::lock) {
            let _ = write!(guard.0, "\r\x1b[K");
            let _ = guard.0.flush();
        }
    }
}

fn progress_line(done: usize, total: usize, elapsed: Duration) -> String {
    let pct = (done * 100).checked_div(total).unwrap_or(100);
    let mut line = format!("reading {done}/{total} images ({pct} %)");
    let secs = elapsed.as_secs_f64();
    if done > 0 && secs > 0.0 {
        let rate = done as f64 / secs;
        line.push_str(&format!(", {rate:.1}/s"));
        if done < total {
            let left = (total - done) as f64 / rate;
            line.push_str(&format!(", about {} left", human_secs(left)));
        }
    }
    line
}

fn human_secs(s: f64) -> String {
    let s = s.ceil() as u64;
    match s {
        0 | 1 => "1 s".to_string(),
        2..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// Exit status 0 when every image gave a bank slip, 1 otherwise. `limits`: the configuration's
/// (`server::reader_limits`), as `serve` reads.
pub fn run(
    paths: &[PathBuf],
    jobs: Option<usize>,
    as_json: bool,
    limits: &reader::Limits,
) -> ExitCode {
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
    let progress = Progress::for_stderr(files.len());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(files.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(i) else { break };
                let outcome = read_one(path, limits);
                if let Ok(mut r) = results.lock() {
                    r[i] = Some(outcome);
                }
                progress.tick();
            });
        }
    });
    progress.finish();
    let results = results.into_inner().unwrap_or_default();
    let mut all_slips = true;
    // A closed stdout (`| head`) ends the listing quietly instead of panicking.
    let mut out = std::io::stdout().lock();
    for o in results.into_iter().flatten() {
        all_slips &= o.kind == Some("bankSlip");
        if as_json {
            let _ = writeln!(
                out,
                "{}",
                json!({ "file": o.file, "payload": o.payload, "kind": o.kind, "error": o.error, "ms": (o.ms * 10.0).round() / 10.0 })
            );
        } else {
            let what = match (&o.payload, &o.error) {
                (Some(p), _) => format!("{} {p}", o.kind.unwrap_or("other")),
                (None, Some(e)) => format!("error: {e}"),
                (None, None) => "error: no QR code".to_string(),
            };
            let _ = writeln!(out, "{}\t{what}\t{:.1} ms", o.file, o.ms);
        }
    }
    if all_slips {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A `Write` whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn line_text() {
        assert_eq!(
            progress_line(0, 120, Duration::ZERO),
            "reading 0/120 images (0 %)"
        );
        assert_eq!(
            progress_line(30, 120, Duration::from_secs(10)),
            "reading 30/120 images (25 %), 3.0/s, about 30 s left"
        );
        assert_eq!(
            progress_line(120, 120, Duration::from_secs(40)),
            "reading 120/120 images (100 %), 3.0/s"
        );
        assert_eq!(
            progress_line(1, 1000, Duration::from_secs(2)),
            "reading 1/1000 images (0 %), 0.5/s, about 33 min 18 s left"
        );
        assert_eq!(human_secs(0.2), "1 s");
        assert_eq!(human_secs(7200.0), "2 h 0 min");
    }

    #[test]
    fn draws_in_place_and_erases_itself() {
        let out = Shared::default();
        let p = Progress::new(3, Some(Box::new(out.clone())));
        for _ in 0..3 {
            p.tick();
        }
        p.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        // First and last states are always drawn; the ticks in between are throttled.
        assert!(
            text.starts_with("\rreading 0/3 images (0 %)\x1b[K"),
            "{text:?}"
        );
        assert!(text.contains("\rreading 3/3 images (100 %)"), "{text:?}");
        assert!(text.ends_with("\r\x1b[K"), "{text:?}");
        assert!(!text.contains('\n'), "{text:?}");
    }

    #[test]
    fn disabled_progress_writes_nothing() {
        let p = Progress::new(3, None);
        p.tick();
        p.finish();
        assert!(p.sink.is_none());
    }
}
