//! Limits on a multipart/form-data stream as its bytes arrive, before the parser buffers them:
//! the whole stream (part headers included) and each part's header block. The parser keeps a
//! part's headers in memory until their blank line, so without this a client could send
//! gigabytes of "headers".
//!
//! Standard library only, so the request-body fuzz target includes this file as it is.

/// Why a stream was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tripped {
    /// More bytes than the whole-stream limit.
    StreamTooLong,
    /// A part's header block (from its boundary line to the blank line) is too long.
    HeaderTooLong,
}

/// Scans a multipart stream chunk by chunk; the chunks can be cut anywhere.
#[derive(Debug, Clone)]
pub struct FormGuard {
    /// `\r\n--boundary`: the stream is scanned as if it began with `\r\n`.
    delimiter: Vec<u8>,
    max_stream: usize,
    max_header: usize,
    seen: usize,
    in_header: bool,
    header_len: usize,
    /// The end of the previous chunk that could start a pattern split across chunks.
    tail: Vec<u8>,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        match hay[i..=hay.len() - needle.len()]
            .iter()
            .position(|&b| b == first)
        {
            None => return None,
            Some(p) => {
                i += p;
                if &hay[i..i + needle.len()] == needle {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}

impl FormGuard {
    pub fn new(boundary: &str, max_stream: usize, max_header: usize) -> Self {
        let mut delimiter = b"\r\n--".to_vec();
        delimiter.extend_from_slice(boundary.as_bytes());
        Self {
            delimiter,
            max_stream,
            max_header,
            seen: 0,
            in_header: false,
            header_len: 0,
            tail: b"\r\n".to_vec(),
        }
    }

    /// Accounts for the next chunk; an error once a limit is passed (and for every later chunk).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Tripped> {
        self.seen = self.seen.saturating_add(chunk.len());
        if self.seen > self.max_stream {
            return Err(Tripped::StreamTooLong);
        }
        let mut buf = std::mem::take(&mut self.tail);
        buf.extend_from_slice(chunk);
        let mut i = 0;
        loop {
            let rest = &buf[i..];
            let pattern: &[u8] = if self.in_header {
                b"\r\n\r\n"
            } else {
                &self.delimiter
            };
            match find(rest, pattern) {
                Some(p) => {
                    if self.in_header {
                        self.header_len += p;
                        if self.header_len > self.max_header {
                            return Err(Tripped::HeaderTooLong);
                        }
                        self.in_header = false;
                    } else {
                        self.in_header = true;
                        self.header_len = 0;
                    }
                    i += p + pattern.len();
                }
                None => {
                    // Keep what could begin the pattern; count the rest of a header now.
                    let keep = rest.len().min(pattern.len() - 1);
                    if self.in_header {
                        self.header_len += rest.len() - keep;
                        if self.header_len > self.max_header {
                            return Err(Tripped::HeaderTooLong);
                        }
                    }
                    self.tail = rest[rest.len() - keep..].to_vec();
                    return Ok(());
                }
            }
        }
    }
}

/// The `boundary` parameter of a `multipart/form-data` content type.
pub fn boundary(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"'))
            .filter(|b| !b.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORM: &[u8] = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nhello\r\n--XyZ\r\nContent-Disposition: form-data; name=\"image\"; filename=\"s.png\"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n\r\n...\r\n--XyZ--\r\n";

    #[test]
    fn a_normal_form_passes_however_it_is_cut() {
        for size in [1, 2, 3, 7, 64, FORM.len()] {
            let mut g = FormGuard::new("XyZ", 1 << 20, 100);
            for c in FORM.chunks(size) {
                assert_eq!(g.feed(c), Ok(()), "chunks of {size}");
            }
        }
    }

    #[test]
    fn long_part_headers_are_stopped_however_they_are_cut() {
        let mut form = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: ".to_vec();
        form.extend(std::iter::repeat_n(b'a', 10_000));
        for size in [1, 5, 4096, form.len()] {
            let mut g = FormGuard::new("XyZ", 1 << 20, 8192);
            let r: Result<(), Tripped> = form.chunks(size).try_for_each(|c| g.feed(c));
            assert_eq!(r, Err(Tripped::HeaderTooLong), "chunks of {size}");
        }
        // Data may be as long as it likes (up to the stream limit).
        let mut data = FORM[..FORM.len() - 12].to_vec();
        data.extend(std::iter::repeat_n(b'\r', 20_000));
        let mut g = FormGuard::new("XyZ", 1 << 20, 100);
        assert_eq!(g.feed(&data), Ok(()));
    }

    #[test]
    fn the_whole_stream_is_capped() {
        let mut g = FormGuard::new("XyZ", 10, 100);
        assert_eq!(g.feed(b"--XyZ\r\n"), Ok(()));
        assert_eq!(g.feed(b"1234"), Err(Tripped::StreamTooLong));
    }

    #[test]
    fn boundary_parameter() {
        assert_eq!(boundary("multipart/form-data; boundary=abc"), Some("abc"));
        assert_eq!(
            boundary("multipart/form-data; charset=x; BOUNDARY=\"a b\""),
            Some("a b")
        );
        assert_eq!(boundary("multipart/form-data"), None);
    }
}
