//! Why a payload was rejected. Messages are written for end users; `code()` is for machines.

use serde::Serialize;

/// The other kinds of QR that [`crate::parse_bank_slip`] recognises and refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum NotSlipKind {
    TrueMoney,
    PromptPayPayment,
}

/// What is wrong with a bank slip's transaction reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ReferenceProblem {
    #[error("the transaction reference is empty")]
    Empty,
    #[error("the transaction reference is longer than {max} characters", max = crate::MAX_REFERENCE_LEN)]
    TooLong { length: usize },
    /// `position` is in the whole payload, like every other position.
    #[error("the transaction reference may contain only letters and digits (bad character at position {position})")]
    InvalidCharacter { position: usize },
}

/// Serialized as `{"code": "<code()>", ...fields}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum QrError {
    #[error("the QR payload is empty")]
    Empty,
    #[error("payload is longer than {max} characters")]
    TooLong { max: usize },
    /// The text is not a well-formed sequence of tag/length/value fields.
    #[error("the QR payload is malformed at position {position}: {reason}")]
    BadTlv {
        position: usize,
        reason: &'static str,
    },
    /// `tag` is a path such as `00.01` (sub-tag 01 inside tag 00).
    #[error("the QR payload has no {field} (tag {tag})")]
    MissingTag {
        tag: &'static str,
        field: &'static str,
    },
    /// Two fields with the same tag would make the payload ambiguous.
    #[error("the QR payload has more than one {field} (tag {tag})")]
    DuplicateTag {
        tag: &'static str,
        field: &'static str,
    },
    #[error("the QR payload has no CRC checksum")]
    MissingCrc,
    #[error("the QR payload's CRC checksum is malformed: {reason}")]
    MalformedCrc { reason: &'static str },
    /// `expected` is what the content hashes to, `found` what the payload carries.
    #[error("CRC mismatch: the payload is damaged or was altered")]
    CrcMismatch { expected: String, found: String },
    #[error("unsupported slip QR format")]
    BadApiId { found: String },
    #[error("unknown sending bank code {code}")]
    UnknownBank {
        // `code` names the error itself in the serialized form.
        #[serde(rename = "bankCode")]
        code: String,
    },
    #[error("{problem}")]
    BadReference { problem: ReferenceProblem },
    #[error("the country code must be two capital letters")]
    BadCountry { found: String },
    /// A field of a TrueMoney slip that is present but not valid.
    #[error("invalid {field}: {reason}")]
    BadField {
        field: &'static str,
        reason: &'static str,
    },
    #[error("{}", not_slip_message(*kind))]
    NotABankSlip { kind: NotSlipKind },
}

fn not_slip_message(kind: NotSlipKind) -> &'static str {
    match kind {
        NotSlipKind::TrueMoney => "this is a TrueMoney Wallet slip, not a bank transfer slip",
        NotSlipKind::PromptPayPayment => {
            "this is a PromptPay payment QR (a request to pay), not a transfer slip"
        }
    }
}

impl QrError {
    /// Stable snake_case machine code; equal to the `code` field of the serialized error.
    pub fn code(&self) -> &'static str {
        match self {
            QrError::Empty => "empty",
            QrError::TooLong { .. } => "too_long",
            QrError::BadTlv { .. } => "bad_tlv",
            QrError::MissingTag { .. } => "missing_tag",
            QrError::DuplicateTag { .. } => "duplicate_tag",
            QrError::MissingCrc => "missing_crc",
            QrError::MalformedCrc { .. } => "malformed_crc",
            QrError::CrcMismatch { .. } => "crc_mismatch",
            QrError::BadApiId { .. } => "bad_api_id",
            QrError::UnknownBank { .. } => "unknown_bank",
            QrError::BadReference { .. } => "bad_reference",
            QrError::BadCountry { .. } => "bad_country",
            QrError::BadField { .. } => "bad_field",
            QrError::NotABankSlip { .. } => "not_a_bank_slip",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of each variant: the code and message users and clients will see.
    fn samples() -> Vec<(QrError, &'static str, &'static str)> {
        vec![
            (QrError::Empty, "empty", "the QR payload is empty"),
            (
                QrError::TooLong { max: 128 },
                "too_long",
                "payload is longer than 128 characters",
            ),
            (
                QrError::BadTlv {
                    position: 7,
                    reason: "field tag is not two digits",
                },
                "bad_tlv",
                "the QR payload is malformed at position 7: field tag is not two digits",
            ),
            (
                QrError::MissingTag {
                    tag: "00.01",
                    field: "sending bank",
                },
                "missing_tag",
                "the QR payload has no sending bank (tag 00.01)",
            ),
            (
                QrError::DuplicateTag {
                    tag: "51",
                    field: "country code",
                },
                "duplicate_tag",
                "the QR payload has more than one country code (tag 51)",
            ),
            (
                QrError::MissingCrc,
                "missing_crc",
                "the QR payload has no CRC checksum",
            ),
            (
                QrError::MalformedCrc {
                    reason: "it must be the last field",
                },
                "malformed_crc",
                "the QR payload's CRC checksum is malformed: it must be the last field",
            ),
            (
                QrError::CrcMismatch {
                    expected: "1EE9".into(),
                    found: "1EE8".into(),
                },
                "crc_mismatch",
                "CRC mismatch: the payload is damaged or was altered",
            ),
            (
                QrError::BadApiId {
                    found: "000002".into(),
                },
                "bad_api_id",
                "unsupported slip QR format",
            ),
            (
                QrError::UnknownBank {
                    code: "999".into(),
                },
                "unknown_bank",
                "unknown sending bank code 999",
            ),
            (
                QrError::BadReference {
                    problem: ReferenceProblem::Empty,
                },
                "bad_reference",
                "the transaction reference is empty",
            ),
            (
                QrError::BadReference {
                    problem: ReferenceProblem::TooLong { length: 36 },
                },
                "bad_reference",
                "the transaction reference is longer than 35 characters",
            ),
            (
                QrError::BadReference {
                    problem: ReferenceProblem::InvalidCharacter { position: 30 },
                },
                "bad_reference",
                "the transaction reference may contain only letters and digits (bad character at position 30)",
            ),
            (
                QrError::BadCountry { found: "th".into() },
                "bad_country",
                "the country code must be two capital letters",
            ),
            (
                QrError::BadField {
                    field: "transaction id",
                    reason: "it must be 14 digits",
                },
                "bad_field",
                "invalid transaction id: it must be 14 digits",
            ),
            (
                QrError::NotABankSlip {
                    kind: NotSlipKind::TrueMoney,
                },
                "not_a_bank_slip",
                "this is a TrueMoney Wallet slip, not a bank transfer slip",
            ),
            (
                QrError::NotABankSlip {
                    kind: NotSlipKind::PromptPayPayment,
                },
                "not_a_bank_slip",
                "this is a PromptPay payment QR (a request to pay), not a transfer slip",
            ),
        ]
    }

    #[test]
    fn codes_and_messages() {
        for (err, code, message) in samples() {
            assert_eq!(err.code(), code, "{err:?}");
            assert_eq!(err.to_string(), message, "{err:?}");
        }
    }

    #[test]
    fn serialized_code_equals_code() {
        for (err, code, _) in samples() {
            let json = serde_json::to_value(&err).unwrap();
            assert_eq!(json["code"], code, "{json}");
        }
        let json = serde_json::to_value(QrError::BadReference {
            problem: ReferenceProblem::InvalidCharacter { position: 30 },
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"code": "bad_reference", "problem": {"type": "invalidCharacter", "position": 30}})
        );
        let json = serde_json::to_value(QrError::NotABankSlip {
            kind: NotSlipKind::PromptPayPayment,
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"code": "not_a_bank_slip", "kind": "promptPayPayment"})
        );
    }
}
