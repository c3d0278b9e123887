//! Steps shared by every kind: trimming, the length limit, the top-level fields and the CRC.

use crate::tlv::{Field, Tlv};
use crate::{crc, QrError, MAX_PAYLOAD_LEN};

/// Trims the scanner's surrounding whitespace and enforces 1..=128 characters before any parsing.
pub(crate) fn prepare(input: &str) -> Result<&str, QrError> {
    prepare_up_to(input, MAX_PAYLOAD_LEN)
}

/// [`prepare`] with another limit: 1..=`max` characters after trimming.
pub(crate) fn prepare_up_to(input: &str, max: usize) -> Result<&str, QrError> {
    let payload = input.trim();
    if payload.is_empty() {
        return Err(QrError::Empty);
    }
    // Counts at most `max + 1` characters, so a huge input costs no more than a short one.
    if payload.chars().nth(max).is_some() {
        return Err(QrError::TooLong { max });
    }
    Ok(payload)
}

/// Reads the top-level fields and checks that the last one is a valid CRC under `crc_tag`
/// (`91` for slips, `63` for payment QRs). Returns the fields before the CRC.
pub(crate) fn checked_fields<'a>(
    payload: &'a str,
    crc_tag: &str,
) -> Result<Vec<Field<'a>>, QrError> {
    let mut fields = Tlv::new(payload, 0).collect::<Result<Vec<_>, _>>()?;
    let Some(crc_index) = fields.iter().position(|f| f.tag == crc_tag) else {
        return Err(QrError::MissingCrc);
    };
    if crc_index + 1 != fields.len() {
        return Err(QrError::MalformedCrc {
            reason: "it must be the last field",
        });
    }
    let crc_field = fields[crc_index];
    if crc_field.value.len() != 4 {
        return Err(QrError::MalformedCrc {
            reason: "it must be 4 characters long",
        });
    }
    if !crc_field.value.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(QrError::MalformedCrc {
            reason: "it must be a hexadecimal number",
        });
    }
    // The CRC covers everything before its value, its own tag and length included.
    let expected = crc::crc_hex(&payload.as_bytes()[..crc_field.value_start]);
    // Some apps and scanners write or pass on lower-case hex.
    if !crc_field.value.eq_ignore_ascii_case(&expected) {
        return Err(QrError::CrcMismatch {
            expected,
            found: crc_field.value.to_owned(),
        });
    }
    fields.pop();
    Ok(fields)
}

/// The one field at `path` (e.g. `"00.01"`: its last two characters are the tag) among `fields`.
pub(crate) fn get<'a>(
    fields: &[Field<'a>],
    path: &'static str,
    name: &'static str,
) -> Result<Option<Field<'a>>, QrError> {
    let tag = &path[path.len() - 2..];
    let mut hits = fields.iter().filter(|f| f.tag == tag);
    let first = hits.next().copied();
    if hits.next().is_some() {
        return Err(QrError::DuplicateTag {
            tag: path,
            field: name,
        });
    }
    Ok(first)
}

pub(crate) fn require<'a>(
    fields: &[Field<'a>],
    path: &'static str,
    name: &'static str,
) -> Result<Field<'a>, QrError> {
    get(fields, path, name)?.ok_or(QrError::MissingTag {
        tag: path,
        field: name,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlipKind {
    Bank,
    TrueMoney,
}

/// A slip payload whose structure and CRC are good and whose kind is known.
pub(crate) struct SlipFrame<'a> {
    pub payload: &'a str,
    /// Top-level fields, CRC excluded.
    pub top: Vec<Field<'a>>,
    /// Sub-fields of tag 00.
    pub data: Vec<Field<'a>>,
    pub kind: SlipKind,
}

impl<'a> SlipFrame<'a> {
    pub fn read(payload: &'a str) -> Result<Self, QrError> {
        let top = checked_fields(payload, "91")?;
        let data = require(&top, "00", "slip data")?.nested()?;
        let api_id = require(&data, "00.00", "format identifier")?;
        let kind = match api_id.value {
            "000001" => SlipKind::Bank,
            "01" => SlipKind::TrueMoney,
            other => {
                return Err(QrError::BadApiId {
                    found: other.to_owned(),
                })
            }
        };
        Ok(SlipFrame {
            payload,
            top,
            data,
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_trims_and_limits_length() {
        assert_eq!(prepare(" \t\r\nabc\r\n").unwrap(), "abc");
        assert_eq!(prepare(""), Err(QrError::Empty));
        assert_eq!(prepare(" \r\n\t "), Err(QrError::Empty));
        let limit = "a".repeat(MAX_PAYLOAD_LEN);
        assert_eq!(prepare(&format!(" {limit}\n")).unwrap(), limit);
        assert_eq!(
            prepare(&format!("{limit}a")),
            Err(QrError::TooLong { max: 128 })
        );
        // Characters, not bytes: 128 Thai letters are within the limit (and rejected later).
        assert!(prepare(&"ก".repeat(MAX_PAYLOAD_LEN)).is_ok());
        assert!(prepare(&"ก".repeat(MAX_PAYLOAD_LEN + 1)).is_err());
    }
}
