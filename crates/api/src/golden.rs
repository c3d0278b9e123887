//! Golden files for byte-exact tests (hidden; shared by this crate's error bytes test and the
//! HTTP tests' recordings, testkit's `wire_bytes`): `GOLDEN_UPDATE=1` writes the file,
//! otherwise the text must match it and a mismatch names its first differing line.

/// Compares `got` with the golden file at `path` (or writes it under `GOLDEN_UPDATE`); on a
/// mismatch panics with `{what} changed at line N` and both lines.
pub fn check(path: &str, got: &str, what: &str) {
    if std::env::var_os("GOLDEN_UPDATE").is_some() {
        std::fs::write(path, got).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(path)
        .unwrap_or_else(|_| panic!("{path} is missing (GOLDEN_UPDATE=1 writes it)"));
    if let Some((n, w, g)) = first_difference(&want, got) {
        panic!("{what} changed at line {n}:\n want: {w}\n  got: {g}");
    }
}

/// The first line (counted from 1) where two texts differ, with each side's line; `<end>` for
/// the side that ran out. `None` when they are equal.
fn first_difference<'a>(want: &'a str, got: &'a str) -> Option<(usize, &'a str, &'a str)> {
    if want == got {
        return None;
    }
    let (mut w, mut g) = (want.lines(), got.lines());
    let mut n = 1;
    loop {
        match (w.next(), g.next()) {
            (Some(a), Some(b)) if a == b => n += 1,
            (None, None) => return Some((n, "<end>", "<end>")),
            (a, b) => return Some((n, a.unwrap_or("<end>"), b.unwrap_or("<end>"))),
        }
    }
}
