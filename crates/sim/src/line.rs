//! A LINE platform simulator on loopback (`../shared/line.md`), for the slip bot's tests: the
//! content host (`GET /v2/bot/message/{id}/content`, `api-data.line.me`'s role) and the
//! Messaging API (`POST /v2/bot/message/reply`, `/push`, `/v2/bot/chat/loading/start`), each
//! wanting `Authorization: Bearer <channel token>`. Every call is recorded with its headers and
//! body; reply tokens are single-use and can be expired; a push's `X-Line-Retry-Key` already
//! accepted is answered 409 and not recorded again, as LINE does; the next pushes can be
//! switched to fail (429, 500). Messages are checked as LINE checks them (1 to 5 per call;
//! `quoteToken` only on text and sticker messages; a Flex message's `altText` at most 400
//! characters): a call that breaks a rule is answered 400 and recorded as `refused`. A kind
//! of call can be held (`hold`): it is recorded (a reply's token spent) and then left
//! unanswered until `release`, so a test can stop a node in the middle of it.
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
    /// `reply`, `push`, `loading`, `content`, or `refused` (a send that broke LINE's rules:
    /// the body is `{call, why}`).
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
    held: HashSet<&'static str>,
}

type Shared = Arc<Mutex<LineState>>;
type Sim = (Shared, Arc<tokio::sync::Notify>);

/// The simulator; stops when dropped.
pub struct LineSim {
    pub addr: SocketAddr,
    shared: Shared,
    released: Arc<tokio::sync::Notify>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl LineSim {
    /// Starts on `127.0.0.1:0`, accepting `channel_token` as the bearer token.
    pub async fn start(channel_token: &str) -> LineSim {
        let shared: Shared = Arc::default();
        shared.lock().expect("lock").token = channel_token.to_string();
        let released = Arc::new(tokio::sync::Notify::new());
        let app = Router::new()
            .route("/v2/bot/message/{id}/content", get(content))
            .route("/v2/bot/message/reply", post(reply))
            .route("/v2/bot/message/push", post(push))
            .route("/v2/bot/chat/loading/start", post(loading))
            .with_state((shared.clone(), released.clone()));
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
            released,
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

    /// From now on calls of `kind` (`reply`, `push`, `content`) are recorded and then left
    /// unanswered until [`LineSim::release`].
    pub fn hold(&self, kind: &'static str) {
        self.state().held.insert(kind);
    }

    /// Answers the held calls and stops holding.
    pub fn release(&self) {
        self.state().held.clear();
        self.released.notify_waiters();
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

/// Waits while calls of `kind` are held (the call is already recorded).
async fn wait_if_held(sh: &Shared, released: &tokio::sync::Notify, kind: &str) {
    loop {
        let notified = released.notified();
        if !sh.lock().expect("lock").held.contains(kind) {
            return;
        }
        notified.await;
    }
}

/// LINE's checks of a send's `messages` (messaging-api.yml): 1 to 5; `quoteToken` only on
/// `text`, `textV2` and `sticker`; a Flex message's `altText` of 1 to 400 characters.
fn messages_error(body: &Value) -> Option<String> {
    let Some(list) = body["messages"].as_array() else {
        return Some("messages: required".into());
    };
    if list.is_empty() || list.len() > 5 {
        return Some(format!("messages: {} messages, 1 to 5 allowed", list.len()));
    }
    for (i, m) in list.iter().enumerate() {
        let kind = m["type"].as_str().unwrap_or("");
        if m.get("quoteToken").is_some() && !matches!(kind, "text" | "textV2" | "sticker") {
            return Some(format!("messages[{i}].quoteToken: not allowed on {kind}"));
        }
        if kind == "flex" {
            let n = m["altText"].as_str().map_or(0, |a| a.chars().count());
            if n == 0 || n > 400 {
                return Some(format!("messages[{i}].altText: {n} characters"));
            }
        }
    }
    None
}

fn refused(s: &mut LineState, h: &HeaderMap, body: Value, why: String) -> Response {
    s.record("refused", h, json!({"call": body, "why": why}));
    error(StatusCode::BAD_REQUEST, &why)
}

impl LineState {
    /// Keeps a call for the test to read.
    fn record(&mut self, kind: &'static str, h: &HeaderMap, body: Value) {
        self.calls.push(LineCall {
            kind,
            headers: headers_of(h),
            body,
        });
    }
}

/// The bearer token check every LINE endpoint makes.
fn authorized(s: &LineState, h: &HeaderMap) -> bool {
    h.get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {}", s.token))
}

async fn content(
    State((sh, released)): State<Sim>,
    Path(id): Path<String>,
    h: HeaderMap,
) -> Response {
    {
        let mut s = sh.lock().expect("lock");
        if !authorized(&s, &h) {
            return error(StatusCode::UNAUTHORIZED, "Authentication failed");
        }
        s.record("content", &h, json!({"messageId": id}));
    }
    wait_if_held(&sh, &released, "content").await;
    let s = sh.lock().expect("lock");
    match s.content.get(&id) {
        Some(bytes) => (
            [(axum::http::header::CONTENT_TYPE, "image/jpeg")],
            bytes.clone(),
        )
            .into_response(),
        None => error(StatusCode::NOT_FOUND, "Not found"),
    }
}

async fn reply(State((sh, released)): State<Sim>, h: HeaderMap, body: Bytes) -> Response {
    {
        let mut s = sh.lock().expect("lock");
        if !authorized(&s, &h) {
            return error(StatusCode::UNAUTHORIZED, "Authentication failed");
        }
        let Ok(v) = serde_json::from_slice::<Value>(&body) else {
            return error(StatusCode::BAD_REQUEST, "The request body has 1 error(s)");
        };
        if let Some(why) = messages_error(&v) {
            return refused(&mut s, &h, v, why);
        }
        let token = v["replyToken"].as_str().unwrap_or("").to_string();
        // Single-use, and unusable once old.
        if token.is_empty()
            || s.expired_reply_tokens.contains(&token)
            || !s.used_reply_tokens.insert(token)
        {
            return error(StatusCode::BAD_REQUEST, "Invalid reply token");
        }
        s.record("reply", &h, v);
    }
    wait_if_held(&sh, &released, "reply").await;
    (StatusCode::OK, axum::Json(json!({"sentMessages": []}))).into_response()
}

async fn push(State((sh, released)): State<Sim>, h: HeaderMap, body: Bytes) -> Response {
    let answer = push_call(&sh, &h, &body);
    if answer.status().is_success() {
        wait_if_held(&sh, &released, "push").await;
    }
    answer
}

fn push_call(sh: &Shared, h: &HeaderMap, body: &Bytes) -> Response {
    let mut s = sh.lock().expect("lock");
    if !authorized(&s, h) {
        return error(StatusCode::UNAUTHORIZED, "Authentication failed");
    }
    if let Some(status) = s.push_faults.pop_front() {
        let st = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return error(st, "simulated failure");
    }
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return error(StatusCode::BAD_REQUEST, "The request body has 1 error(s)");
    };
    if let Some(why) = messages_error(&v) {
        return refused(&mut s, h, v, why);
    }
    if let Some(key) = h.get("x-line-retry-key").and_then(|v| v.to_str().ok()) {
        if !s.retry_keys.insert(key.to_string()) {
            return error(StatusCode::CONFLICT, "The retry key is already accepted");
        }
    }
    s.record("push", h, v);
    (StatusCode::OK, axum::Json(json!({"sentMessages": []}))).into_response()
}

async fn loading(State((sh, _)): State<Sim>, h: HeaderMap, body: Bytes) -> Response {
    let mut s = sh.lock().expect("lock");
    if !authorized(&s, &h) {
        return error(StatusCode::UNAUTHORIZED, "Authentication failed");
    }
    s.record(
        "loading",
        &h,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    );
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

/// A text message event from a one-to-one chat (`group`: from a group instead).
pub fn text_event(event_id: &str, text: &str, reply_token: &str, group: Option<&str>) -> Value {
    let mut e = image_event(event_id, "t1", reply_token, group);
    e["message"] = json!({"id": format!("t-{event_id}"), "type": "text", "text": text,
                          "quoteToken": format!("q-t-{event_id}")});
    e
}

/// The bot was added to group `group`.
pub fn join_event(event_id: &str, reply_token: &str, group: &str) -> Value {
    json!({
        "type": "join", "mode": "active", "timestamp": 1_795_760_000_000_i64,
        "webhookEventId": event_id, "deliveryContext": {"isRedelivery": false},
        "source": {"type": "group", "groupId": group}, "replyToken": reply_token
    })
}

/// An image of a set sent at once (`imageSet`): image `index` (1-based) of `total`.
pub fn image_set_event(
    event_id: &str,
    message_id: &str,
    reply_token: &str,
    set_id: &str,
    index: u32,
    total: u32,
) -> Value {
    let mut e = image_event(event_id, message_id, reply_token, None);
    e["message"]["imageSet"] = json!({"id": set_id, "index": index, "total": total});
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_are_checked_as_line_checks_them() {
        let flex = json!({"type": "flex", "altText": "ok", "contents": {"type": "bubble"}});
        let quoting = json!({"type": "text", "text": "hi", "quoteToken": "q"});
        assert_eq!(messages_error(&json!({"messages": [quoting, flex]})), None);
        // Only text and sticker messages may quote.
        let mut quoted_flex = flex.clone();
        quoted_flex["quoteToken"] = json!("q");
        assert!(messages_error(&json!({"messages": [quoted_flex]}))
            .unwrap()
            .contains("quoteToken"));
        assert!(messages_error(&json!({"messages": []})).is_some());
        assert!(messages_error(&json!({"messages": vec![flex.clone(); 6]})).is_some());
        assert!(messages_error(&json!({})).is_some());
        let mut long = flex;
        long["altText"] = json!("ก".repeat(401));
        assert!(messages_error(&json!({"messages": [long.clone()]})).is_some());
        long["altText"] = json!("ก".repeat(400));
        assert_eq!(messages_error(&json!({"messages": [long]})), None);
    }

    #[test]
    fn event_helpers_read_as_the_bot_reads_them() {
        let set = image_set_event("e1", "m1", "rt", "s", 2, 3);
        assert_eq!(set["message"]["imageSet"]["index"], 2);
        assert_eq!(set["message"]["type"], "image");
        let text = text_event("e2", "สรุป", "rt", Some("C1"));
        assert_eq!(text["message"]["text"], "สรุป");
        assert_eq!(text["source"]["groupId"], "C1");
        assert_eq!(join_event("e3", "rt", "C2")["source"]["groupId"], "C2");
    }
}
