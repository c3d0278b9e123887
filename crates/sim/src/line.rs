//! A LINE platform simulator on loopback (`../shared/line.md`), for the slip bot's tests: the
//! content host (`GET /v2/bot/message/{id}/content`, `api-data.line.me`'s role) and the
//! Messaging API (`POST /v2/bot/message/reply`, `/push`, `/v2/bot/chat/loading/start`), each
//! wanting `Authorization: Bearer <channel token>`. Every call is recorded with its headers and
//! body; reply tokens are single-use and can be expired; a push's `X-Line-Retry-Key` already
//! accepted is answered 409 and not recorded again, as LINE does; the next pushes can be
//! switched to fail (429, 500).
//!
//! The same server plays both hosts: `line.api_base` and `line.data_api_base` both point at it.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// One call the bot made.
#[derive(Debug, Clone)]
pub struct LineCall {
    /// `reply`, `push`, `loading` or `content`.
    pub kind: &'static str,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

#[derive(Default)]
struct LineState {
    token: String,
    content: HashMap<String, Vec<u8>>,
    calls: Vec<LineCall>,
    used_reply_tokens: HashSet<String>,
    expired_reply_tokens: HashSet<String>,
    retry_keys: HashSet<String>,
    push_faults: VecDeque<u16>,
}

type Shared = Arc<Mutex<LineState>>;

/// The simulator; stops when dropped.
pub struct LineSim {
    pub addr: SocketAddr,
    shared: Shared,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl LineSim {
    /// Starts on `127.0.0.1:0`, accepting `channel_token` as the bearer token.
    pub async fn start(channel_token: &str) -> LineSim {
        let shared: Shared = Arc::default();
        shared.lock().expect("lock").token = channel_token.to_string();
        let app = Router::new()
            .route("/v2/bot/message/{id}/content", get(content))
            .route("/v2/bot/message/reply", post(reply))
            .route("/v2/bot/message/push", post(push))
            .route("/v2/bot/chat/loading/start", post(loading))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        LineSim {
            addr,
            shared,
            _stop: stop,
        }
    }

    /// `http://127.0.0.1:PORT`, for both `line.api_base` and `line.data_api_base`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serves `bytes` as the content of message `id`.
    pub fn put_content(&self, id: &str, bytes: Vec<u8>) {
        self.state().content.insert(id.into(), bytes);
    }

    /// Makes a reply token unusable (older than LINE keeps it): its reply is answered 400.
    pub fn expire_reply_token(&self, token: &str) {
        self.state().expired_reply_tokens.insert(token.into());
    }

    /// The next pushes answer these statuses (then 200).
    pub fn fail_next_pushes(&self, statuses: &[u16]) {
        self.state().push_faults.extend(statuses);
    }

    /// Every call so far of a kind (`reply`, `push`, `loading`, `content`), in order.
    pub fn calls(&self, kind: &str) -> Vec<LineCall> {
        self.state()
            .calls
            .iter()
            .filter(|c| c.kind == kind)
            .cloned()
            .collect()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, LineState> {
        self.shared.lock().expect("lock")
    }
}

fn headers_of(h: &HeaderMap) -> HashMap<String, String> {
    h.iter()
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect()
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"message": message}))).into_response()
}

/// The bearer token check every LINE endpoint makes.
fn authorized(s: &LineState, h: &HeaderMap) -> bool {
    h.get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {}", s.token))
}

async fn content(State(sh): State<Shared>, Path(id): Path<String>, h: HeaderMap) -> Response {
    let mut s = sh.lock().expect("lock");
    if !authorized(&s, &h) {
        return error(StatusCode::UNAUTHORIZED, "Authentication failed");
    }
    s.calls.push(LineCall {
        kind: "content",
        headers: headers_of(&h),
        body: json!({"messageId": id}),
    });
    match s.content.get(&id) {
        Some(bytes) => (
            [(axum::http::header::CONTENT_TYPE, "image/jpeg")],
            bytes.clone(),
        )
            .into_response(),
        None => error(StatusCode::NOT_FOUND, "Not found"),
    }
}

async fn reply(State(sh): State<Shared>, h: HeaderMap, body: Bytes) -> Response {
    let mut s = sh.lock().expect("lock");
    if !authorized(&s, &h) {
        return error(StatusCode::UNAUTHORIZED, "Authentication failed");
    }
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "The request body has 1 error(s)");
    };
    let token = v["replyToken"].as_str().unwrap_or("").to_string();
    // Single-use, and unusable once old.
    if token.is_empty()
        || s.expired_reply_tokens.contains(&token)
        || !s.used_reply_tokens.insert(token)
    {
        return error(StatusCode::BAD_REQUEST, "Invalid reply token");
    }
    s.calls.push(LineCall {
        kind: "reply",
        headers: headers_of(&h),
        body: v,
    });
    (StatusCode::OK, axum::Json(json!({"sentMessages": []}))).into_response()
}

async fn push(State(sh): State<Shared>, h: HeaderMap, body: Bytes) -> Response {
    let mut s = sh.lock().expect("lock");
    if !authorized(&s, &h) {
        return error(StatusCode::UNAUTHORIZED, "Authentication failed");
    }
    if let Some(status) = s.push_faults.pop_front() {
        let st = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return error(st, "simulated failure");
    }
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "The request body has 1 error(s)");
    };
    if let Some(key) = h.get("x-line-retry-key").and_then(|v| v.to_str().ok()) {
        if !s.retry_keys.insert(key.to_string()) {
            return error(StatusCode::CONFLICT, "The retry key is already accepted");
        }
    }
    s.calls.push(LineCall {
        kind: "push",
        headers: headers_of(&h),
        body: v,
    });
    (StatusCode::OK, axum::Json(json!({"sentMessages": []}))).into_response()
}

async fn loading(State(sh): State<Shared>, h: HeaderMap, body: Bytes) -> Response {
    let mut s = sh.lock().expect("lock");
    if !authorized(&s, &h) {
        return error(StatusCode::UNAUTHORIZED, "Authentication failed");
    }
    s.calls.push(LineCall {
        kind: "loading",
        headers: headers_of(&h),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    (StatusCode::ACCEPTED, axum::Json(json!({}))).into_response()
}

/// A webhook body of `events` as LINE sends it.
pub fn webhook_body(events: Vec<Value>) -> String {
    json!({"destination": "Udeadbeefdeadbeefdeadbeefdeadbeef", "events": events}).to_string()
}

/// An image message event from a one-to-one chat (`group`: from a group instead).
pub fn image_event(
    event_id: &str,
    message_id: &str,
    reply_token: &str,
    group: Option<&str>,
) -> Value {
    let source = match group {
        Some(g) => json!({"type": "group", "groupId": g, "userId": "Ucustomer"}),
        None => json!({"type": "user", "userId": "Ucustomer"}),
    };
    json!({
        "type": "message", "mode": "active", "timestamp": 1_795_760_000_000_i64,
        "webhookEventId": event_id, "deliveryContext": {"isRedelivery": false},
        "source": source, "replyToken": reply_token,
        "message": {"id": message_id, "type": "image", "quoteToken": format!("q-{message_id}"),
                    "contentProvider": {"type": "line"}}
    })
}
