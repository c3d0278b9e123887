//! Turning what a client sent — the QR text, an image, or an image URL — into the parsed slip,
//! once, where it enters; the rest of the request carries the parsed value. Images are read by
//! the `reader` crate on a blocking thread (decoding is CPU work); URLs are fetched only through
//! `egress`, which refuses private and internal addresses.

use crate::auth::Caller;
pub use crate::handles::SlipReader;
use domain::{Error, ServiceId};
use egress::EgressError;
use reader::ReadError;
use slip_qr::{BankSlipQr, ParsedQr, TrueMoneySlipQr};

/// Largest image accepted, in bytes (spec 8).
pub const MAX_IMAGE_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlipInput {
    Payload(String),
    /// An uploaded or Base64 image.
    Image(Vec<u8>),
    Url(String),
}

impl SlipInput {
    /// How it came (`base64`: the image was sent as Base64 text), for the attempts log.
    pub fn kind(&self, base64: bool) -> domain::attempt::InputKind {
        use domain::attempt::InputKind;
        match self {
            SlipInput::Payload(_) => InputKind::Payload,
            SlipInput::Url(_) => InputKind::Url,
            SlipInput::Image(_) if base64 => InputKind::Base64,
            SlipInput::Image(_) => InputKind::Image,
        }
    }
}

/// What the client sent, before any parsing: the text it typed, or the QR texts of its image.
enum Read {
    Typed(String),
    Image(Vec<String>),
}

impl SlipReader<'_> {
    /// The bank slip the client sent, parsed once here and passed on; or why there is none.
    /// Decodes are shared fairly between services (the caller's).
    pub async fn bank_slip(&self, caller: &Caller, input: SlipInput) -> Result<BankSlipQr, Error> {
        let slip = self
            .parse(caller, input, parse_bank_slip, pick_bank_slip)
            .await?;
        caller.trace.slip(&slip.sending_bank, &slip.trans_ref);
        Ok(slip)
    }

    /// The TrueMoney Wallet slip the client sent, parsed once here; or why there is none.
    pub async fn truemoney_slip(
        &self,
        caller: &Caller,
        input: SlipInput,
    ) -> Result<TrueMoneySlipQr, Error> {
        let slip = self
            .parse(caller, input, parse_truemoney_slip, pick_truemoney_slip)
            .await?;
        caller
            .trace
            .slip(crate::wallet::TRUEMONEY, &slip.transaction_id);
        Ok(slip)
    }

    /// The slip of what the client sent: `typed` parses a typed text, `pick` finds it among
    /// an image's QR texts.
    async fn parse<T>(
        &self,
        caller: &Caller,
        input: SlipInput,
        typed: fn(&str) -> Result<T, Error>,
        pick: fn(&[String]) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let read = self.read(&caller.service.id, input).await?;
        let slip = match &read {
            Read::Typed(payload) => typed(payload),
            Read::Image(texts) => pick(texts),
        };
        note_bad_crc(caller, &read, &slip);
        slip
    }

    /// The typed text, or every QR text of the uploaded or fetched image.
    async fn read(&self, service: &ServiceId, input: SlipInput) -> Result<Read, Error> {
        match input {
            SlipInput::Payload(p) => Ok(Read::Typed(p)),
            SlipInput::Image(bytes) => self
                .read_image(service, bytes, Error::InvalidImageFormat)
                .await
                .map(Read::Image),
            SlipInput::Url(url) => {
                let egress = self
                    .egress
                    .ok_or_else(|| Error::internal("egress not configured"))?;
                let fetched =
                    egress
                        .get_limited(&url, MAX_IMAGE_BYTES)
                        .await
                        .map_err(|e| match e {
                            EgressError::ProtocolNotAllowed => Error::UrlProtocolNotAllowed,
                            EgressError::InvalidIpRange => Error::UrlInvalidIpRange,
                            EgressError::TooLarge => Error::ImageSizeTooLarge,
                            EgressError::InvalidUrl => Error::invalid("url", "is not a valid URL"),
                            EgressError::Unreachable(_)
                            | EgressError::Timeout
                            | EgressError::Status(_)
                            | EgressError::TooManyRedirects => Error::ImageUrlUnreachable(
                                "the image URL could not be fetched".into(),
                            ),
                            e @ EgressError::Setup(_) => Error::internal(e),
                        })?;
                self.read_image(service, fetched.body, Error::InvalidImageType)
                    .await
                    .map(Read::Image)
            }
        }
    }

    /// Reads the image's QR texts; `not_image` is the error for bytes that are not an image (it
    /// differs for uploads and URLs in the spec). The decode is admitted against the shared
    /// memory budget from its header first (every path: uploads, Base64 in small JSON bodies,
    /// URLs, async jobs).
    async fn read_image(
        &self,
        service: &ServiceId,
        bytes: Vec<u8>,
        not_image: Error,
    ) -> Result<Vec<String>, Error> {
        let map_err = move |e: ReadError| match e {
            ReadError::TooLarge | ReadError::TooManyPixels => Error::ImageSizeTooLarge,
            ReadError::NotAnImage => not_image.clone(),
            ReadError::NoQr => Error::NoQrInImage,
        };
        let limits = self.image_limits;
        // Header only (no pixel buffer): cheap enough for the async thread.
        let cost = reader::decode_cost(&bytes, &limits).map_err(&map_err)?;
        let admission = self.decode_budget.admit(service, cost).await?;
        tokio::task::spawn_blocking(move || {
            let read = reader::read_qr(&bytes, &limits);
            drop(admission);
            read
        })
        .await
        .map_err(|e| Error::internal(e))?
        .map_err(map_err)
    }
}

/// A QR refused as no slip whose checksum does not match its content (a damaged or altered
/// slip) is noted for the metrics' local decisions; other refusals are "not a slip".
fn note_bad_crc<T>(caller: &Caller, read: &Read, parsed: &Result<T, Error>) {
    if !matches!(parsed, Err(Error::NotASlip(_))) {
        return;
    }
    let texts: &[String] = match read {
        Read::Typed(p) => std::slice::from_ref(p),
        Read::Image(texts) => texts,
    };
    let crc_fails = |t: &String| {
        matches!(
            slip_qr::classify(t),
            Err(slip_qr::QrError::CrcMismatch { .. })
        )
    };
    if texts.iter().any(crc_fails) {
        caller.trace.bad_crc();
    }
}

/// A typed bank slip payload (also a job's stored one, read again by the worker).
pub(crate) fn parse_bank_slip(payload: &str) -> Result<BankSlipQr, Error> {
    slip_qr::parse_bank_slip(payload)
        .map_err(|e| Error::NotASlip(format!("not a valid bank slip QR: {e}")))
}

/// A typed TrueMoney slip payload; another kind of QR says what it is.
fn parse_truemoney_slip(payload: &str) -> Result<TrueMoneySlipQr, Error> {
    match slip_qr::classify(payload) {
        Ok(ParsedQr::TrueMoneySlip(s)) => Ok(s),
        Ok(ParsedQr::BankSlip(_)) => Err(Error::NotASlip(
            "this is a bank slip; verify it with /verify/bank".into(),
        )),
        Ok(ParsedQr::PaymentQr(_)) => Err(Error::NotASlip(
            "this is a payment QR (a request to pay), not a TrueMoney slip".into(),
        )),
        Err(e) => Err(Error::NotASlip(format!(
            "not a valid TrueMoney slip QR: {e}"
        ))),
    }
}

/// The first bank slip among an image's QR texts; otherwise what the first QR is instead (a
/// payment QR, a TrueMoney slip...).
fn pick_bank_slip(texts: &[String]) -> Result<BankSlipQr, Error> {
    let mut first_error = None;
    for text in texts {
        match slip_qr::parse_bank_slip(text) {
            Ok(slip) => return Ok(slip),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(match first_error {
        Some(e) => Error::NotASlip(format!("the QR code in the image is not a bank slip: {e}")),
        None => Error::NoQrInImage,
    })
}

/// The first TrueMoney slip among an image's QR texts.
fn pick_truemoney_slip(texts: &[String]) -> Result<TrueMoneySlipQr, Error> {
    texts
        .iter()
        .find_map(|t| match slip_qr::classify(t) {
            Ok(ParsedQr::TrueMoneySlip(s)) => Some(s),
            _ => None,
        })
        .ok_or_else(|| {
            Error::NotASlip("the QR code in the image is not a TrueMoney Wallet slip".into())
        })
}
