//! Zero-copy reader for EMVCo-style TLV text: 2-digit tag, 2-digit decimal length, value.
//!
//! Works on bytes and accepts only printable ASCII, so slicing can never split a UTF-8 character
//! and a byte offset is also a character offset (positions in errors mean what users count).

use crate::QrError;

/// One field. Offsets are absolute positions in the whole payload, also for nested fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field<'a> {
    pub tag: &'a str,
    pub value: &'a str,
    /// Position of the first character of the tag.
    pub start: usize,
    /// Position of the first character of the value.
    pub value_start: usize,
}

impl<'a> Field<'a> {
    /// The fields nested inside this one's value (templates such as tag 00 or 29).
    pub fn nested(&self) -> Result<Vec<Field<'a>>, QrError> {
        Tlv::new(self.value, self.value_start).collect()
    }
}

/// Iterator over the fields of `data`; yields one error and then stops.
pub(crate) struct Tlv<'a> {
    data: &'a str,
    /// Absolute position of `data[0]` in the payload.
    base: usize,
    pos: usize,
    failed: bool,
}

impl<'a> Tlv<'a> {
    pub fn new(data: &'a str, base: usize) -> Self {
        Tlv {
            data,
            base,
            pos: 0,
            failed: false,
        }
    }

    fn fail(&mut self, at: usize, reason: &'static str) -> Option<Result<Field<'a>, QrError>> {
        self.failed = true;
        Some(Err(QrError::BadTlv {
            position: self.base + at,
            reason,
        }))
    }
}

fn two_digits(bytes: &[u8]) -> Option<usize> {
    match bytes {
        [a, b] if a.is_ascii_digit() && b.is_ascii_digit() => {
            Some(usize::from(a - b'0') * 10 + usize::from(b - b'0'))
        }
        _ => None,
    }
}

fn is_printable_ascii(b: u8) -> bool {
    (0x20..=0x7E).contains(&b)
}

impl<'a> Iterator for Tlv<'a> {
    type Item = Result<Field<'a>, QrError>;

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.data.as_bytes();
        let start = self.pos;
        if self.failed || start >= bytes.len() {
            return None;
        }
        // Report a stray non-ASCII byte as such rather than as a bad tag or length.
        let header_end = (start + 4).min(bytes.len());
        if let Some(i) = bytes[start..header_end]
            .iter()
            .position(|&b| !is_printable_ascii(b))
        {
            return self.fail(start + i, "unexpected non-printable or non-ASCII character");
        }
        if bytes.len() - start < 4 {
            return self.fail(start, "field is cut short");
        }
        if two_digits(&bytes[start..start + 2]).is_none() {
            return self.fail(start, "field tag is not two digits");
        }
        let Some(len) = two_digits(&bytes[start + 2..start + 4]) else {
            return self.fail(start + 2, "field length is not two digits");
        };
        let value_start = start + 4;
        let value_end = value_start + len;
        if value_end > bytes.len() {
            return self.fail(start + 2, "field is longer than the rest of the payload");
        }
        if let Some(i) = bytes[value_start..value_end]
            .iter()
            .position(|&b| !is_printable_ascii(b))
        {
            return self.fail(
                value_start + i,
                "unexpected non-printable or non-ASCII character",
            );
        }
        // Every byte checked so far is ASCII, so these are char boundaries; `get` keeps it
        // panic-free even if that reasoning were ever broken.
        let (Some(tag), Some(value)) = (
            self.data.get(start..start + 2),
            self.data.get(value_start..value_end),
        ) else {
            return self.fail(start, "unexpected non-printable or non-ASCII character");
        };
        self.pos = value_end;
        Some(Ok(Field {
            tag,
            value,
            start: self.base + start,
            value_start: self.base + value_start,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Vec<(&str, &str)>, QrError> {
        Tlv::new(s, 0)
            .map(|f| f.map(|f| (f.tag, f.value)))
            .collect()
    }

    fn bad(s: &str) -> (usize, &'static str) {
        match parse(s) {
            Err(QrError::BadTlv { position, reason }) => (position, reason),
            other => panic!("{s:?}: {other:?}"),
        }
    }

    #[test]
    fn reads_fields_in_order_zero_copy() {
        let s = "0002010102115802TH6304ABCD";
        assert_eq!(
            parse(s).unwrap(),
            [("00", "01"), ("01", "11"), ("58", "TH"), ("63", "ABCD")]
        );
        let f = Tlv::new(s, 0).nth(2).unwrap().unwrap();
        assert_eq!((f.start, f.value_start), (12, 16));
        assert!(std::ptr::eq(f.value.as_ptr(), s[16..].as_ptr()));
    }

    #[test]
    fn empty_input_and_empty_values() {
        assert_eq!(parse("").unwrap(), []);
        assert_eq!(parse("0100").unwrap(), [("01", "")]);
    }

    #[test]
    fn nested_offsets_are_absolute() {
        let s = "99xx000901000301x";
        let outer = Tlv::new(&s[4..], 4).next().unwrap().unwrap();
        assert_eq!(outer.value, "01000301x");
        let inner = outer.nested().unwrap();
        assert_eq!(inner[1].tag, "03");
        assert_eq!((inner[1].start, inner[1].value_start), (12, 16));
        let broken = Tlv::new("0005012x4", 10).next().unwrap().unwrap();
        assert!(matches!(
            broken.nested(),
            Err(QrError::BadTlv { position: 16, .. })
        ));
    }

    #[test]
    fn precise_errors() {
        assert_eq!(bad("000"), (0, "field is cut short"));
        assert_eq!(bad("0001A01"), (5, "field is cut short"));
        assert_eq!(bad("A001x"), (0, "field tag is not two digits"));
        assert_eq!(bad("00x1x"), (2, "field length is not two digits"));
        assert_eq!(
            bad("0005abc"),
            (2, "field is longer than the rest of the payload")
        );
        let non_ascii = "unexpected non-printable or non-ASCII character";
        assert_eq!(bad("0003aé"), (5, non_ascii));
        assert_eq!(bad("0002ab0é"), (7, non_ascii));
        assert_eq!(bad("0002a\tb"), (5, non_ascii));
        assert_eq!(bad("é"), (0, non_ascii));
    }

    #[test]
    fn stops_after_the_first_error() {
        let mut it = Tlv::new("0001a!!", 0);
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }
}
