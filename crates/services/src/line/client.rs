//! The calls the slip bot makes to LINE (`../shared/line.md`): message content from the data
//! host, reply, push (with `X-Line-Retry-Key`) and the loading indicator. Operator-configured
//! hosts (`[line] api_base`, `data_api_base`): https unless loopback, through `[outbound] proxy`,
//! no redirects, bounded time and bytes.

use serde_json::{json, Value};
use std::time::Duration;

/// Largest content downloaded (the image upload limit).
pub const MAX_CONTENT_BYTES: usize = crate::input::MAX_IMAGE_BYTES;

#[derive(Clone)]
pub struct LineClient {
    api_base: String,
    data_api_base: String,
    http: reqwest::Client,
}

/// Why a call did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// LINE answered with this status (400 for a used or expired reply token, 409 for a push
    /// retry key already accepted, 429 over the rate limit).
    Status(u16),
    /// The content is larger than [`MAX_CONTENT_BYTES`].
    TooLarge,
    /// No answer (connection, timeout).
    Unreachable(String),
}

impl LineError {
    /// Worth trying again later: LINE's rate limit, its own errors, no answer.
    pub fn is_transient(&self) -> bool {
        match self {
            LineError::Status(s) => *s == 429 || *s >= 500,
            LineError::Unreachable(_) => true,
            LineError::TooLarge => false,
        }
    }
}

/// Why the LINE client cannot be set up (each names its configuration key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("line.api_base: {0}")]
    ApiBase(egress::SetupError),
    #[error("line.data_api_base: {0}")]
    DataApiBase(egress::SetupError),
    #[error("{0}")]
    Client(egress::SetupError),
}

impl LineClient {
    pub fn new(
        api_base: &str,
        data_api_base: &str,
        outbound: &egress::operator::OutboundSettings,
        timeout: Duration,
    ) -> Result<LineClient, SetupError> {
        let api = egress::operator::check_operator_url(api_base).map_err(SetupError::ApiBase)?;
        let data =
            egress::operator::check_operator_url(data_api_base).map_err(SetupError::DataApiBase)?;
        Ok(LineClient {
            api_base: api.as_str().trim_end_matches('/').to_string(),
            data_api_base: data.as_str().trim_end_matches('/').to_string(),
            http: egress::operator::operator_client(outbound, timeout)
                .map_err(SetupError::Client)?,
        })
    }

    /// A message's content (an image), at most [`MAX_CONTENT_BYTES`].
    pub async fn content(&self, token: &str, message_id: &str) -> Result<Vec<u8>, LineError> {
        // The id goes into a path: LINE's are digits; anything else is refused here.
        if message_id.is_empty() || !message_id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(LineError::Status(400));
        }
        let url = format!("{}/v2/bot/message/{message_id}/content", self.data_api_base);
        let mut resp = self
            .http
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .map_err(|e| LineError::Unreachable(e.without_url().to_string()))?;
        if !resp.status().is_success() {
            return Err(LineError::Status(resp.status().as_u16()));
        }
        if resp
            .content_length()
            .is_some_and(|n| n > MAX_CONTENT_BYTES as u64)
        {
            return Err(LineError::TooLarge);
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| LineError::Unreachable(e.without_url().to_string()))?
        {
            if body.len() + chunk.len() > MAX_CONTENT_BYTES {
                return Err(LineError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    pub async fn reply(
        &self,
        token: &str,
        reply_token: &str,
        messages: &[Value],
    ) -> Result<(), LineError> {
        let body = json!({"replyToken": reply_token, "messages": messages});
        self.post(token, "/v2/bot/message/reply", &body, None).await
    }

    /// A push to a user, group or room; `retry_key` (a UUID) makes a retried push land once.
    pub async fn push(
        &self,
        token: &str,
        to: &str,
        messages: &[Value],
        retry_key: &str,
    ) -> Result<(), LineError> {
        let body = json!({"to": to, "messages": messages});
        match self
            .post(token, "/v2/bot/message/push", &body, Some(retry_key))
            .await
        {
            // Already accepted under this key: it was sent.
            Err(LineError::Status(409)) => Ok(()),
            other => other,
        }
    }

    /// The loading indicator in a one-to-one chat; best effort.
    pub async fn loading(&self, token: &str, chat_id: &str) {
        let body = json!({"chatId": chat_id, "loadingSeconds": 20});
        let _ = self
            .post(token, "/v2/bot/chat/loading/start", &body, None)
            .await;
    }

    async fn post(
        &self,
        token: &str,
        path: &str,
        body: &Value,
        retry_key: Option<&str>,
    ) -> Result<(), LineError> {
        let mut req = self
            .http
            .post(format!("{}{path}", self.api_base))
            .bearer_auth(token)
            .json(body);
        if let Some(k) = retry_key {
            req = req.header("x-line-retry-key", k);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| LineError::Unreachable(e.without_url().to_string()))?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(LineError::Status(resp.status().as_u16()))
        }
    }
}
