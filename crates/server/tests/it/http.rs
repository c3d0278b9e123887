//! Requests to a running `slipverify` as a client sends them.

use serde_json::Value;

/// Sends the request and reads its body as JSON.
pub async fn json_of(req: reqwest::RequestBuilder) -> Value {
    req.send().await.unwrap().json().await.unwrap()
}

/// Sends the request and reads its body as text.
pub async fn text_of(req: reqwest::RequestBuilder) -> String {
    req.send().await.unwrap().text().await.unwrap()
}
