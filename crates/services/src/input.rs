//! Turning what a client sent — the QR text, an image, or an image URL — into the slip's QR
//! payload. Images are read by the `reader` crate on a blocking thread (decoding is CPU work);
//! URLs are fetched only through `egress`, which refuses private and internal addresses.

use crate::Services;
use domain::Error;
use egress::EgressError;
use reader::ReadError;

/// Largest image accepted, in bytes (spec 8).
pub const MAX_IMAGE_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlipInput {
    Payload(String),
    /// An uploaded or Base64 image.
    Image(Vec<u8>),
    Url(String),
}

/// Which kind of slip QR an image is searched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlipKind {
    Bank,
    TrueMoney,
}

impl SlipKind {
    fn accepts(self, text: &str) -> bool {
        match self {
            SlipKind::Bank => slip_qr::parse_bank_slip(text).is_ok(),
            SlipKind::TrueMoney => matches!(
                slip_qr::classify(text),
                Ok(slip_qr::ParsedQr::TrueMoneySlip(_))
            ),
        }
    }
}

impl Services {
    /// The QR payload of the bank slip the client sent, or why there is none.
    pub async fn slip_payload(&self, input: SlipInput) -> Result<String, Error> {
        self.slip_payload_of(input, SlipKind::Bank).await
    }

    /// The QR payload of a slip of `kind` the client sent, or why there is none.
    pub async fn slip_payload_of(&self, input: SlipInput, kind: SlipKind) -> Result<String, Error> {
        match input {
            SlipInput::Payload(p) => Ok(p),
            SlipInput::Image(bytes) => {
                self.read_image(bytes, Error::InvalidImageFormat, kind)
                    .await
            }
            SlipInput::Url(url) => {
                let egress = self
                    .egress
                    .as_ref()
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
                self.read_image(fetched.body, Error::InvalidImageType, kind)
                    .await
            }
        }
    }
}

impl Services {
    /// Reads the image; `not_image` is the error for bytes that are not an image (it differs
    /// for uploads and URLs in the spec). The decode is admitted against the shared memory
    /// budget from its header first (every path: uploads, Base64 in small JSON bodies, URLs,
    /// async jobs). Picks the first QR that is a bank slip; otherwise says what was found.
    async fn read_image(
        &self,
        bytes: Vec<u8>,
        not_image: Error,
        kind: SlipKind,
    ) -> Result<String, Error> {
        let map_err = move |e: ReadError| match e {
            ReadError::TooLarge | ReadError::TooManyPixels => Error::ImageSizeTooLarge,
            ReadError::NotAnImage => not_image.clone(),
            ReadError::NoQr => Error::NoQrInImage,
        };
        let limits = self.image_limits;
        // Header only (no pixel buffer): cheap enough for the async thread.
        let cost = reader::decode_cost(&bytes, &limits).map_err(&map_err)?;
        let admission = self.decode_budget.admit(cost).await?;
        let texts = tokio::task::spawn_blocking(move || {
            let read = reader::read_qr(&bytes, &limits);
            drop(admission);
            read
        })
        .await
        .map_err(Error::internal)?
        .map_err(map_err)?;
        pick(texts, kind)
    }
}

/// The slip among the QR texts found, or why there is none.
fn pick(texts: Vec<String>, kind: SlipKind) -> Result<String, Error> {
    if let Some(slip) = texts.iter().find(|t| kind.accepts(t)) {
        return Ok(slip.clone());
    }
    if kind == SlipKind::TrueMoney {
        return Err(Error::SlipNotFound(
            "the QR code in the image is not a TrueMoney Wallet slip".into(),
        ));
    }
    // A QR that is not a bank slip: say what it is (a payment QR, a TrueMoney slip...).
    match texts.first().map(|t| slip_qr::parse_bank_slip(t)) {
        Some(Err(e)) => Err(Error::SlipNotFound(format!(
            "the QR code in the image is not a bank slip: {e}"
        ))),
        _ => Err(Error::NoQrInImage),
    }
}
