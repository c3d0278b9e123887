//! The LINE slip bot's pure parts (`../shared/line.md`): the webhook signature, the webhook
//! body as far as the bot reads it, and the replies — Flex messages with a readable `altText`,
//! in Thai (the default) or English. No I/O.

use crate::Satang;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Sha256;
use time::OffsetDateTime;

/// `X-Line-Signature`: Base64 of HMAC-SHA256 over the raw body with the channel secret.
pub fn signature(channel_secret: &str, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(channel_secret.as_bytes()).expect("any key length");
    mac.update(body);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `header` is the body's signature; compared in constant time (`verify_slice`).
pub fn signature_ok(channel_secret: &str, body: &[u8], header: &str) -> bool {
    let Ok(given) = base64::engine::general_purpose::STANDARD.decode(header.trim()) else {
        return false;
    };
    let mut mac =
        Hmac::<Sha256>::new_from_slice(channel_secret.as_bytes()).expect("any key length");
    mac.update(body);
    mac.verify_slice(&given).is_ok()
}

/// The webhook body (`CallbackRequest`); unknown fields are ignored, LINE adds them.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Callback {
    #[serde(default)]
    pub destination: String,
    pub events: Vec<Event>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub webhook_event_id: String,
    #[serde(default)]
    pub delivery_context: DeliveryContext,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: i64,
    #[serde(default)]
    pub mode: String,
    #[serde(default)]
    pub source: Option<Source>,
    #[serde(default)]
    pub reply_token: Option<String>,
    #[serde(default)]
    pub message: Option<Message>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryContext {
    #[serde(default)]
    pub is_redelivery: bool,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// `user`, `group` or `room`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub group_id: Option<String>,
    #[serde(default)]
    pub room_id: Option<String>,
}

impl Source {
    /// Where a push to this chat goes: the group, the room, or the user.
    pub fn chat_id(&self) -> Option<&str> {
        self.group_id
            .as_deref()
            .or(self.room_id.as_deref())
            .or(self.user_id.as_deref())
    }

    /// A group or a room (several people): group mode applies.
    pub fn is_group(&self) -> bool {
        self.kind == "group" || self.kind == "room"
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    /// `image`, `text`, ...
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub content_provider: Option<ContentProvider>,
    #[serde(default)]
    pub image_set: Option<ImageSet>,
    #[serde(default)]
    pub quote_token: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContentProvider {
    /// `line` (download from LINE) or `external` (`original_content_url`).
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub original_content_url: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ImageSet {
    pub id: String,
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub total: u32,
}

/// The language of a branch's replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    Th,
    En,
}

impl Lang {
    pub fn parse(s: &str) -> Option<Lang> {
        match s {
            "th" => Some(Lang::Th),
            "en" => Some(Lang::En),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Th => "th",
            Lang::En => "en",
        }
    }
}

/// Whether the bot speaks in a group on every slip (`verbose`) or only on problems (`silent`,
/// the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupMode {
    #[default]
    Silent,
    Verbose,
}

impl GroupMode {
    pub fn parse(s: &str) -> Option<GroupMode> {
        match s {
            "silent" => Some(GroupMode::Silent),
            "verbose" => Some(GroupMode::Verbose),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            GroupMode::Silent => "silent",
            GroupMode::Verbose => "verbose",
        }
    }
}

/// A branch's LINE Official Account. The bot answers only when both the secret and the token
/// are set.
#[derive(Clone, PartialEq)]
pub struct LineSettings {
    pub channel_secret: Option<String>,
    pub channel_token: Option<String>,
    /// The staff group or user that gets notices and each verified payment.
    pub notify_to: Option<String>,
    pub language: Lang,
    pub group_mode: GroupMode,
    /// Push messages cost money: off by default.
    pub push: bool,
    pub push_daily_limit: u32,
}

impl Default for LineSettings {
    fn default() -> Self {
        LineSettings {
            channel_secret: None,
            channel_token: None,
            notify_to: None,
            language: Lang::Th,
            group_mode: GroupMode::Silent,
            push: false,
            push_daily_limit: Self::DEFAULT_PUSH_DAILY_LIMIT,
        }
    }
}

impl LineSettings {
    /// The default daily push limit per branch.
    pub const DEFAULT_PUSH_DAILY_LIMIT: u32 = 50;

    /// Secret and token, when the bot is set up.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        Some((
            self.channel_secret.as_deref()?,
            self.channel_token.as_deref()?,
        ))
    }
}

// Written out so the secret and the token never reach a log through `{:?}`.
impl std::fmt::Debug for LineSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineSettings")
            .field(
                "channel_secret",
                &self.channel_secret.as_ref().map(|_| "[set]"),
            )
            .field(
                "channel_token",
                &self.channel_token.as_ref().map(|_| "[set]"),
            )
            .field("notify_to", &self.notify_to)
            .field("language", &self.language)
            .field("group_mode", &self.group_mode)
            .field("push", &self.push)
            .field("push_daily_limit", &self.push_daily_limit)
            .finish()
    }
}

/// Changes to a branch's LINE settings; `None` leaves a field, `Some("")` clears a text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinePatch {
    pub channel_secret: Option<String>,
    pub channel_token: Option<String>,
    pub notify_to: Option<String>,
    pub language: Option<Lang>,
    pub group_mode: Option<GroupMode>,
    pub push: Option<bool>,
    pub push_daily_limit: Option<u32>,
}

impl LinePatch {
    pub fn is_empty(&self) -> bool {
        *self == LinePatch::default()
    }

    /// `settings` with this patch applied.
    pub fn apply(&self, mut s: LineSettings) -> LineSettings {
        let text = |new: &Option<String>, old: Option<String>| match new {
            None => old,
            Some(v) if v.is_empty() => None,
            Some(v) => Some(v.clone()),
        };
        s.channel_secret = text(&self.channel_secret, s.channel_secret.take());
        s.channel_token = text(&self.channel_token, s.channel_token.take());
        s.notify_to = text(&self.notify_to, s.notify_to.take());
        s.language = self.language.unwrap_or(s.language);
        s.group_mode = self.group_mode.unwrap_or(s.group_mode);
        s.push = self.push.unwrap_or(s.push);
        s.push_daily_limit = self.push_daily_limit.unwrap_or(s.push_daily_limit);
        s
    }
}

/// A verified slip as the card shows it: only what the bank sent (masked names and accounts).
#[derive(Debug, Clone, PartialEq)]
pub struct SlipCard {
    pub amount: Satang,
    pub sender_name: String,
    pub sender_bank: String,
    pub sender_account: String,
    pub receiver_name: String,
    pub receiver_bank: String,
    pub receiver_account: String,
    pub occurred_at: OffsetDateTime,
    pub trans_ref: String,
}

/// What the bot answers about one slip.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Verified(SlipCard),
    /// Used before; when it was first verified.
    Duplicate(SlipCard, OffsetDateTime),
    /// Verified, but paid to an account the branch does not have.
    WrongAccount(SlipCard),
    NotFound,
    /// Bangkok Bank and others confirm late: checked again, the result pushed.
    Pending,
    /// The picture holds no slip QR (one-to-one only: groups stay silent).
    NoQr,
    /// A refusal the customer must not see (quota, inactive branch): staff will confirm.
    StaffWillConfirm,
}

impl Verdict {
    /// A problem worth a word in a group in `silent` mode (all but a good slip).
    pub fn is_problem(&self) -> bool {
        !matches!(self, Verdict::Verified(_))
    }
}

/// `1,250.50`: Arabic digits, thousands separated.
pub fn amount_text(a: Satang) -> String {
    let whole = (a.0 / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{grouped}.{:02}", a.0 % 100)
}

/// `27 พ.ย. 2569 14:05 น.` (Thai time, Buddhist-era year) or `27 Nov 2026 14:05`.
pub fn date_text(t: OffsetDateTime, lang: Lang) -> String {
    const TH: [&str; 12] = [
        "ม.ค.",
        "ก.พ.",
        "มี.ค.",
        "เม.ย.",
        "พ.ค.",
        "มิ.ย.",
        "ก.ค.",
        "ส.ค.",
        "ก.ย.",
        "ต.ค.",
        "พ.ย.",
        "ธ.ค.",
    ];
    const EN: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = crate::clock::bangkok(t);
    let m = usize::from(u8::from(t.month())) - 1;
    match lang {
        Lang::Th => format!(
            "{} {} {} {:02}:{:02} น.",
            t.day(),
            TH[m],
            t.year() + 543,
            t.hour(),
            t.minute()
        ),
        Lang::En => format!(
            "{} {} {} {:02}:{:02}",
            t.day(),
            EN[m],
            t.year(),
            t.hour(),
            t.minute()
        ),
    }
}

const GREEN: &str = "#1DB446";
const RED: &str = "#D93025";
const AMBER: &str = "#F29900";
const GREY: &str = "#666666";

fn text(t: &str, size: &str, color: &str, bold: bool) -> Value {
    let mut v = json!({"type": "text", "text": t, "size": size, "color": color, "wrap": true});
    if bold {
        v["weight"] = json!("bold");
    }
    v
}

fn row(label: &str, value: &str) -> Value {
    json!({"type": "box", "layout": "baseline", "spacing": "sm", "contents": [
        {"type": "text", "text": label, "size": "sm", "color": GREY, "flex": 2},
        {"type": "text", "text": value, "size": "sm", "wrap": true, "flex": 5}
    ]})
}

/// The reply for a verdict: one Flex message whose `altText` (≤ 400 characters) starts with the
/// verdict and the amount, so the phone's notification is readable.
pub fn reply(v: &Verdict, lang: Lang) -> Value {
    let th = lang == Lang::Th;
    let baht = |a: Satang| {
        if th {
            format!("{} บาท", amount_text(a))
        } else {
            format!("THB {}", amount_text(a))
        }
    };
    let (title, color, card, note): (&str, &str, Option<&SlipCard>, Option<String>) = match v {
        Verdict::Verified(c) => (
            if th {
                "✅ สลิปถูกต้อง"
            } else {
                "✅ Slip verified"
            },
            GREEN,
            Some(c),
            None,
        ),
        Verdict::Duplicate(c, first) => (
            if th {
                "⛔ สลิปซ้ำ"
            } else {
                "⛔ Duplicate slip"
            },
            RED,
            Some(c),
            Some(if th {
                format!("ใช้ไปแล้วเมื่อ {}", date_text(*first, lang))
            } else {
                format!("First used {}", date_text(*first, lang))
            }),
        ),
        Verdict::WrongAccount(c) => (
            if th {
                "⛔ บัญชีผู้รับไม่ถูกต้อง"
            } else {
                "⛔ Wrong receiving account"
            },
            RED,
            Some(c),
            Some(
                if th {
                    "โอนเข้าบัญชีที่ไม่ใช่ของร้าน"
                } else {
                    "Paid to an account that is not the shop's"
                }
                .into(),
            ),
        ),
        Verdict::NotFound => (
            if th {
                "⚠️ ไม่พบรายการโอน"
            } else {
                "⚠️ Transfer not found"
            },
            RED,
            None,
            Some(
                if th {
                    "ธนาคารไม่พบรายการนี้ กรุณาตรวจสอบสลิปอีกครั้ง"
                } else {
                    "The bank has no such transfer; please check the slip."
                }
                .into(),
            ),
        ),
        Verdict::Pending => (
            if th {
                "⏳ รอธนาคารยืนยัน"
            } else {
                "⏳ Waiting for the bank"
            },
            AMBER,
            None,
            Some(
                if th {
                    "กำลังตรวจสอบอีกครั้งในอีกไม่กี่นาที"
                } else {
                    "Checking again in a few minutes."
                }
                .into(),
            ),
        ),
        Verdict::NoQr => (
            if th {
                "📷 ไม่พบ QR ของสลิป"
            } else {
                "📷 No slip QR found"
            },
            AMBER,
            None,
            Some(
                if th {
                    "กรุณาส่งรูปสลิปที่ชัดขึ้น ให้เห็น QR ทั้งหมด"
                } else {
                    "Please send a clearer picture showing the whole QR code."
                }
                .into(),
            ),
        ),
        Verdict::StaffWillConfirm => (
            if th {
                "ได้รับสลิปแล้ว"
            } else {
                "Slip received"
            },
            GREY,
            None,
            Some(
                if th {
                    "เจ้าหน้าที่จะตรวจสอบและยืนยันให้"
                } else {
                    "Our staff will confirm it."
                }
                .into(),
            ),
        ),
    };
    let mut body = vec![text(title, "lg", color, true)];
    let mut alt = title.to_string();
    if let Some(c) = card {
        body.push(text(&baht(c.amount), "xxl", "#111111", true));
        alt.push(' ');
        alt.push_str(&baht(c.amount));
        let (from, to, when, reference) = if th {
            ("จาก", "ถึง", "วันที่", "เลขอ้างอิง")
        } else {
            ("From", "To", "Date", "Ref.")
        };
        body.push(row(
            from,
            &format!("{} ({} {})", c.sender_name, c.sender_bank, c.sender_account),
        ));
        body.push(row(
            to,
            &format!(
                "{} ({} {})",
                c.receiver_name, c.receiver_bank, c.receiver_account
            ),
        ));
        body.push(row(when, &date_text(c.occurred_at, lang)));
        body.push(row(reference, &c.trans_ref));
    }
    if let Some(n) = note {
        body.push(text(&n, "sm", GREY, false));
        alt.push_str(" · ");
        alt.push_str(&n);
    }
    json!({
        "type": "flex",
        "altText": truncate(&alt, 400),
        "contents": {"type": "bubble", "body": {"type": "box", "layout": "vertical", "spacing": "md", "contents": body}}
    })
}

/// At most `max` characters (LINE counts characters, not bytes).
fn truncate(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// A plain text message.
pub fn text_message(t: &str) -> Value {
    json!({"type": "text", "text": truncate(t, 5000)})
}

/// The answer to `join`: the chat's id, so staff can set `--line-notify-to`.
pub fn join_text(chat_id: &str) -> String {
    format!("slipverify: this chat's id is {chat_id}")
}

/// The answer to `สรุป` / `summary` in the staff chat: today's verified slips and their total.
pub fn summary_text(count: usize, total: Satang, lang: Lang) -> String {
    match lang {
        Lang::Th => format!("สรุปวันนี้: {count} รายการ {} บาท", amount_text(total)),
        Lang::En => format!("Today: {count} slips, THB {}", amount_text(total)),
    }
}

/// The staff notice of a verified payment (to `notifyTo`).
pub fn notice_paid(amount: Satang, lang: Lang) -> String {
    match lang {
        Lang::Th => format!("✅ {} บาท", amount_text(amount)),
        Lang::En => format!("✅ {} THB", amount_text(amount)),
    }
}

/// The staff notice of a slip the customer was told staff will confirm; `code` says why.
pub fn notice_unchecked(code: &str) -> String {
    format!("slipverify: a slip could not be checked ({code}); please confirm it by hand")
}

/// The messages answering a verdict. LINE lets only text and sticker messages quote
/// (`quoteToken`; a Flex message has no such field in messaging-api.yml), so with the
/// customer's image's quote token the card is preceded by a text quoting the image: the
/// verdict and the amount, the notification's first line. Without a token: the card alone.
pub fn verdict_messages(v: &Verdict, lang: Lang, quote_token: Option<&str>) -> Vec<Value> {
    let card = reply(v, lang);
    match quote_token.filter(|q| !q.is_empty()) {
        Some(q) => {
            let alt = card["altText"].as_str().unwrap_or_default();
            // The verdict and the amount: the `altText` up to its note.
            let head = alt.split(" · ").next().unwrap_or(alt);
            let mut quoted = text_message(head);
            quoted["quoteToken"] = json!(q);
            vec![quoted, card]
        }
        None => vec![card],
    }
}

/// LINE's webhook event types, the label values of `slipverify_line_events_total{type}`;
/// another type counts as `other` (labels come from a closed set).
pub const EVENT_TYPES: [&str; 14] = [
    "message",
    "follow",
    "unfollow",
    "join",
    "leave",
    "memberJoined",
    "memberLeft",
    "postback",
    "unsend",
    "videoPlayComplete",
    "beacon",
    "accountLink",
    "membership",
    "other",
];

impl Event {
    /// The event's type as a metric label: one of [`EVENT_TYPES`].
    pub fn type_label(&self) -> &'static str {
        EVENT_TYPES
            .iter()
            .find(|t| **t == self.kind)
            .copied()
            .unwrap_or("other")
    }

    /// Where the event came from as a metric label: `user`, `group`, `room`, or `none`
    /// (no source, or one of another type).
    pub fn source_label(&self) -> &'static str {
        match self.source.as_ref().map(|s| s.kind.as_str()) {
            Some("user") => "user",
            Some("group") => "group",
            Some("room") => "room",
            _ => "none",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_documented_scheme() {
        // HMAC-SHA256("secret", "{}") in Base64, as `@line/bot-sdk` computes it.
        let sig = signature("secret", b"{}");
        assert!(signature_ok("secret", b"{}", &sig));
        assert!(!signature_ok("secret", b"{} ", &sig));
        assert!(!signature_ok("other", b"{}", &sig));
        assert!(!signature_ok("secret", b"{}", "not base64!"));
        assert!(!signature_ok("secret", b"{}", ""));
    }

    #[test]
    fn reads_an_image_event() {
        let body = r#"{"destination":"U1","events":[{"type":"message","mode":"active",
            "timestamp":1795760000000,"source":{"type":"group","groupId":"C1","userId":"U9"},
            "webhookEventId":"01J0","deliveryContext":{"isRedelivery":true},
            "replyToken":"rt","message":{"id":"m1","type":"image","quoteToken":"q",
            "contentProvider":{"type":"line"},"imageSet":{"id":"s","index":1,"total":2}},
            "somethingNew":1}]}"#;
        let cb: Callback = serde_json::from_str(body).unwrap();
        let e = &cb.events[0];
        assert!(e.delivery_context.is_redelivery);
        let s = e.source.as_ref().unwrap();
        assert!(s.is_group());
        assert_eq!(s.chat_id(), Some("C1"));
        let m = e.message.as_ref().unwrap();
        assert_eq!(m.image_set.as_ref().unwrap().total, 2);
        assert_eq!(m.content_provider.as_ref().unwrap().kind, "line");
        let empty: Callback = serde_json::from_str(r#"{"destination":"U1","events":[]}"#).unwrap();
        assert!(empty.events.is_empty());
    }

    #[test]
    fn amounts_and_thai_dates() {
        assert_eq!(amount_text(Satang(125_050)), "1,250.50");
        assert_eq!(amount_text(Satang(5)), "0.05");
        assert_eq!(amount_text(Satang(100_000_000)), "1,000,000.00");
        let t = time::macros::datetime!(2026-11-27 07:05 UTC);
        assert_eq!(date_text(t, Lang::Th), "27 พ.ย. 2569 14:05 น.");
        assert_eq!(date_text(t, Lang::En), "27 Nov 2026 14:05");
    }

    fn card() -> SlipCard {
        SlipCard {
            amount: Satang(125_050),
            sender_name: "นาย ส".into(),
            sender_bank: "KBANK".into(),
            sender_account: "xxx-x-x1234-x".into(),
            receiver_name: "ร้าน".into(),
            receiver_bank: "SCB".into(),
            receiver_account: "xxx-x-x5678-x".into(),
            occurred_at: time::macros::datetime!(2026-11-27 07:05 UTC),
            trans_ref: "016331140712ATF07959".into(),
        }
    }

    #[test]
    fn alt_text_leads_with_the_verdict_and_amount() {
        let r = reply(&Verdict::Verified(card()), Lang::Th);
        assert_eq!(r["type"], "flex");
        assert_eq!(r["altText"], "✅ สลิปถูกต้อง 1,250.50 บาท");
        let first = time::macros::datetime!(2026-11-26 03:00 UTC);
        let r = reply(&Verdict::Duplicate(card(), first), Lang::Th);
        let alt = r["altText"].as_str().unwrap();
        assert!(alt.starts_with("⛔ สลิปซ้ำ 1,250.50 บาท"), "{alt}");
        assert!(alt.contains("26 พ.ย. 2569 10:00 น."), "{alt}");
        let r = reply(&Verdict::Pending, Lang::En);
        assert!(r["altText"].as_str().unwrap().starts_with("⏳ Waiting"));
        for v in [Verdict::NotFound, Verdict::NoQr, Verdict::StaffWillConfirm] {
            assert!(
                reply(&v, Lang::Th)["altText"]
                    .as_str()
                    .unwrap()
                    .chars()
                    .count()
                    <= 400
            );
        }
    }

    #[test]
    fn a_quote_token_puts_a_quoting_text_before_the_card() {
        let v = Verdict::Duplicate(card(), time::macros::datetime!(2026-11-26 03:00 UTC));
        let m = verdict_messages(&v, Lang::Th, Some("q-1"));
        assert_eq!(m.len(), 2);
        assert_eq!(m[0]["type"], "text");
        assert_eq!(m[0]["quoteToken"], "q-1");
        assert_eq!(m[0]["text"], "⛔ สลิปซ้ำ 1,250.50 บาท");
        assert_eq!(m[1], reply(&v, Lang::Th));
        // No token (or an empty one): the card alone, which cannot quote.
        assert_eq!(
            verdict_messages(&v, Lang::Th, None),
            vec![reply(&v, Lang::Th)]
        );
        assert_eq!(verdict_messages(&v, Lang::Th, Some("")).len(), 1);
        assert!(m[1].get("quoteToken").is_none());
    }

    #[test]
    fn metric_labels_come_from_closed_sets() {
        let ev = |kind: &str, source: Option<&str>| Event {
            kind: kind.into(),
            webhook_event_id: String::new(),
            delivery_context: DeliveryContext::default(),
            timestamp: 0,
            mode: String::new(),
            source: source.map(|k| Source {
                kind: k.into(),
                user_id: None,
                group_id: None,
                room_id: None,
            }),
            reply_token: None,
            message: None,
        };
        assert_eq!(ev("message", Some("group")).type_label(), "message");
        assert_eq!(ev("memberJoined", Some("room")).source_label(), "room");
        assert_eq!(ev("somethingNew\"", Some("user")).type_label(), "other");
        assert_eq!(ev("join", Some("channel")).source_label(), "none");
        assert_eq!(ev("join", None).source_label(), "none");
    }

    proptest::proptest! {
        #[test]
        fn alt_text_is_never_longer_than_400(name in "\\PC{0,600}") {
            let mut c = card();
            c.sender_name = name;
            let r = reply(&Verdict::Duplicate(c, time::OffsetDateTime::UNIX_EPOCH), Lang::En);
            proptest::prop_assert!(r["altText"].as_str().unwrap().chars().count() <= 400);
        }

        #[test]
        fn a_changed_body_never_passes(body in proptest::collection::vec(0u8.., 0..200), flip in 0usize..200) {
            let sig = signature("s3cret", &body);
            proptest::prop_assert!(signature_ok("s3cret", &body, &sig));
            if !body.is_empty() {
                let mut other = body.clone();
                let i = flip % other.len();
                other[i] ^= 1;
                proptest::prop_assert!(!signature_ok("s3cret", &other, &sig));
            }
        }
    }
}
