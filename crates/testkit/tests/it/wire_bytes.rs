//! Golden bytes of every answer shape over HTTP: each route's success, its typical errors, v1
//! and v2, the admin and partner APIs, a polled job and the webhook body. What is recorded is
//! the status, the headers a client reads (every header but `date`, `content-length` and
//! `x-request-id`) and the body exactly as sent. Values that differ between runs (ids, keys,
//! random references and accounts) are replaced by numbered placeholders in order of first
//! appearance, so the record still shows which values are equal; the clock is fixed. Both
//! backends must produce the same file. `GOLDEN_UPDATE=1` rewrites the files (a deliberate
//! change, reviewed in the diff).

use domain::model::Transfer;
use serde_json::json;
use testkit::receiver::Receiver;
use testkit::{both, Backend, TestApp};

use crate::common::blank_png;

const TOKEN: &str = "golden-admin-token-0123456789abcdef0123";

/// The fixed instant every scenario starts at (2026-11-23 10:00 Bangkok).
fn start() -> time::OffsetDateTime {
    time::macros::datetime!(2026-11-23 03:00 UTC)
}

enum Body {
    None,
    Json(String),
    Form(&'static str, Vec<u8>),
}

fn j(v: serde_json::Value) -> Body {
    Body::Json(v.to_string())
}

/// A request without a body: label, method, path, `Authorization`, other headers.
type Head<'a> = (
    &'a str,
    &'a str,
    &'a str,
    Option<&'a str>,
    &'a [(&'a str, &'a str)],
);

struct Tape<'a> {
    t: &'a TestApp,
    out: String,
    /// Run-dependent values and their placeholders, longest first when applied.
    masks: Vec<(String, String)>,
}

impl<'a> Tape<'a> {
    fn new(t: &'a TestApp) -> Self {
        Tape {
            t,
            out: String::new(),
            masks: Vec::new(),
        }
    }

    fn mask(&mut self, value: &str, name: &str) {
        if !value.is_empty() && !self.masks.iter().any(|(v, _)| v == value) {
            self.masks.push((value.to_string(), format!("<{name}>")));
        }
    }

    /// A sandbox transfer's random parts.
    fn mask_transfer(&mut self, tr: &Transfer, n: usize) {
        self.mask(&tr.payload, &format!("payload{n}"));
        self.mask(&tr.trans_ref, &format!("ref{n}"));
        self.mask(&tr.sender.account, &format!("sender-account{n}"));
        self.mask(&tr.receiver.account, &format!("receiver-account{n}"));
    }

    /// A sandbox transfer, its random parts masked as the `n`th.
    async fn transfer(&mut self, from: &str, to: &str, satang: i64, n: usize) -> Transfer {
        let tr = self.t.transfer(from, to, satang).await;
        self.mask_transfer(&tr, n);
        tr
    }

    fn redact(&self, text: &str) -> String {
        let mut masks = self.masks.clone();
        masks.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
        let mut s = text.to_string();
        for (v, name) in &masks {
            s = s.replace(v.as_str(), name);
        }
        number_uuids(&s)
    }

    async fn send(
        &mut self,
        label: &str,
        method: &str,
        path: &str,
        auth: Option<&str>,
        headers: &[(&str, &str)],
        body: Body,
    ) -> serde_json::Value {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.t.http.request(m, format!("{}{path}", self.t.base));
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        for (n, v) in headers {
            req = req.header(*n, *v);
        }
        req = match body {
            Body::None => req,
            Body::Json(s) => req.header("content-type", "application/json").body(s),
            Body::Form(field, bytes) => req.multipart(testkit::slip_form(field, bytes, &[])),
        };
        let resp = req.send().await.expect("request");
        let mut rec = format!(
            "## {label}\n{method} {}\n{}\n",
            path,
            resp.status().as_u16()
        );
        let mut hs: Vec<(String, String)> = resp
            .headers()
            .iter()
            .filter(|(n, _)| !["date", "content-length", "x-request-id"].contains(&n.as_str()))
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("?").to_string()))
            .collect();
        hs.sort();
        for (n, v) in hs {
            rec.push_str(&format!("{n}: {v}\n"));
        }
        let text = resp.text().await.expect("body");
        rec.push_str(&text);
        rec.push_str("\n\n");
        self.out.push_str(&rec);
        serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
    }

    /// `send` of each (label, body) in order, all to one route with one key and headers.
    async fn send_each<const N: usize>(
        &mut self,
        method: &str,
        path: &str,
        auth: Option<&str>,
        headers: &[(&str, &str)],
        cases: [(&str, Body); N],
    ) {
        for (label, body) in cases {
            self.send(label, method, path, auth, headers, body).await;
        }
    }

    /// `send` of each (label, method, path, auth, headers) in order, without a body.
    async fn send_heads(&mut self, requests: &[Head<'_>]) {
        for &(label, method, path, auth, headers) in requests {
            self.send(label, method, path, auth, headers, Body::None)
                .await;
        }
    }

    /// `send` with a JSON body and no extra headers.
    async fn post(
        &mut self,
        label: &str,
        method: &str,
        path: &str,
        auth: Option<&str>,
        body: serde_json::Value,
    ) -> serde_json::Value {
        self.send(label, method, path, auth, &[], j(body)).await
    }

    /// `send` without a body or extra headers.
    async fn get(
        &mut self,
        label: &str,
        method: &str,
        path: &str,
        auth: Option<&str>,
    ) -> serde_json::Value {
        self.send(label, method, path, auth, &[], Body::None).await
    }

    /// Redacts the whole record and compares it with `golden/<name>.txt`.
    fn check(&self, name: &str) {
        let got = self.redact(&self.out);
        let path = format!("{}/tests/it/golden/{name}.txt", env!("CARGO_MANIFEST_DIR"));
        api::golden::check(&path, &got, &format!("{name}: answer bytes"));
    }
}

/// A partner signing its requests in the branch-in-path form (no `X-Branch-Key`).
struct Signer {
    key: String,
    secret: String,
    now: i64,
}

impl Signer {
    async fn send(
        &self,
        tp: &mut Tape<'_>,
        label: &str,
        method: &str,
        path: &str,
        body: &str,
    ) -> serde_json::Value {
        let nonce = uuid::Uuid::new_v4().to_string();
        let ts = self.now.to_string();
        let sig = domain::partner::sign(
            &self.secret,
            &domain::partner::canonical(method, path, &ts, &nonce, body.as_bytes()),
        );
        let body = if body.is_empty() {
            Body::None
        } else {
            Body::Json(body.to_string())
        };
        tp.send(
            label,
            method,
            &format!("/v2{path}"),
            None,
            &[
                ("x-api-key", &self.key),
                ("x-timestamp", &ts),
                ("x-nonce", &nonce),
                ("x-signature", &sig),
            ],
            body,
        )
        .await
    }
}

/// Every UUID (8-4-4-4-12 hex) becomes `<uuid-N>`, N by first appearance.
fn number_uuids(s: &str) -> String {
    let b = s.as_bytes();
    let shape = |w: &[u8]| {
        w.len() == 36
            && w.iter().enumerate().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => *c == b'-',
                _ => c.is_ascii_hexdigit(),
            })
    };
    let mut seen: Vec<String> = Vec::new();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if i + 36 <= b.len()
            && s.is_char_boundary(i)
            && s.is_char_boundary(i + 36)
            && shape(&b[i..i + 36])
        {
            let u = &s[i..i + 36];
            let n = match seen.iter().position(|x| x == u) {
                Some(n) => n,
                None => {
                    seen.push(u.to_string());
                    seen.len() - 1
                }
            };
            out.push_str(&format!("<uuid-{}>", n + 1));
            i += 36;
        } else {
            let ch = s[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

async fn spawn(b: Backend, configure: impl FnOnce(&mut services::Services)) -> TestApp {
    let t = TestApp::spawn_with(b, configure).await;
    t.clock.set(start());
    t
}

both!(v2_answers, |b: Backend| async move {
    let t = spawn(b, |_| {}).await;
    let ten = t.tenant(100).await;
    let empty = t.tenant(0).await;
    let mut tp = Tape::new(&t);
    let bearer = format!("Bearer {}", ten.api_key);
    let k = Some(bearer.as_str());
    let none_left = format!("Bearer {}", empty.api_key);
    let e = Some(none_left.as_str());
    let tr = tp.transfer("004", "014", 15050, 1).await;
    let bbl = tp.transfer("002", "014", 990, 2).await;

    tp.get("health", "GET", "/health", None).await;
    tp.get("banks", "GET", "/v2/banks", k).await;
    tp.get("info", "GET", "/v2/info", k).await;
    tp.get("no key", "GET", "/v2/info", None).await;
    tp.get("bad key", "GET", "/v2/info", Some("Bearer nope"))
        .await;
    tp.get("unknown route", "GET", "/v2/nope", k).await;
    tp.get("wrong method", "DELETE", "/v2/banks", k).await;
    let unknown = slip_qr::encode_bank_slip("004", "20261123ABCDEFGHIJ");
    let png = server::slip_image::png_bytes(&tr.payload, "004").unwrap();
    let verify = [
        ("verified", j(json!({"payload": tr.payload}))),
        (
            "duplicate",
            j(json!({"payload": tr.payload, "matchAmount": 99, "checkDuplicate": true})),
        ),
        (
            "amount and account",
            j(json!({"payload": tr.payload, "matchAmount": 150.5, "matchAccount": true})),
        ),
        ("pending", j(json!({"payload": bbl.payload}))),
        (
            "validation",
            j(json!({"payload": 5, "matchAmount": "x", "extra": true})),
        ),
        ("empty body", j(json!({}))),
        ("not json", Body::Json("{".into())),
        ("not a slip", j(json!({"payload": "hello"}))),
        ("unknown slip", j(json!({"payload": unknown}))),
        (
            "base64 not an image",
            j(json!({"base64": "aGVsbG8gd29ybGQ="})),
        ),
        (
            "url refused",
            j(json!({"url": "http://127.0.0.1/slip.png"})),
        ),
        ("upload", Body::Form("image", png)),
        ("upload without QR", Body::Form("image", blank_png())),
    ];
    tp.send_each("POST", "/v2/verify/bank", k, &[], verify)
        .await;
    let other = tp.transfer("004", "014", 100, 3).await;
    let keyed = [
        ("idempotent", j(json!({"payload": other.payload}))),
        ("idempotent replay", j(json!({"payload": other.payload}))),
        ("idempotency key reused", j(json!({"payload": tr.payload}))),
    ];
    let same_key = [("idempotency-key", "golden-key-1")];
    tp.send_each("POST", "/v2/verify/bank", k, &same_key, keyed)
        .await;
    let over = tp.transfer("004", "014", 200, 4).await;
    let body = json!({"payload": over.payload});
    tp.post("quota exceeded", "POST", "/v2/verify/bank", e, body)
        .await;

    // TrueMoney.
    let w = wallet_transfer(&t, &mut tp).await;
    for (label, auth, body) in [
        (
            "truewallet",
            k,
            json!({"payload": w.payload, "matchAmount": 50.25}),
        ),
        (
            "truewallet quota exceeded",
            e,
            json!({"payload": w.payload}),
        ),
        (
            "truewallet not a wallet slip",
            k,
            json!({"payload": tr.payload}),
        ),
    ] {
        tp.post(label, "POST", "/v2/verify/truewallet", auth, body)
            .await;
    }

    // Bank accounts.
    let acct = json!({"bankCode": "014", "bankNumber": "123-4-56789-0",
        "nameTh": "บริษัท ร้านตัวอย่าง จำกัด", "nameEn": "Sample Shop Co., Ltd.", "type": "JURISTIC"});
    let v = tp
        .post(
            "account created",
            "POST",
            "/v2/bank-accounts",
            k,
            acct.clone(),
        )
        .await;
    let id = v["data"]["id"].as_str().unwrap_or("none").to_string();
    let account = format!("/v2/bank-accounts/{id}");
    tp.post("account duplicate", "POST", "/v2/bank-accounts", k, acct)
        .await;
    let invalid = json!({"bankCode": "999", "bankNumber": "x"});
    tp.post("account invalid", "POST", "/v2/bank-accounts", k, invalid)
        .await;
    tp.get("accounts", "GET", "/v2/bank-accounts", k).await;
    tp.get("account", "GET", &account, k).await;
    let patch = json!({"nameEn": "Shop", "extraVerify": null});
    tp.post("account patched", "PATCH", &account, k, patch)
        .await;
    tp.get("account deleted", "DELETE", &account, k).await;
    tp.get("account gone", "GET", &account, k).await;

    // TrueMoney receiving accounts and `matchAccount` on wallet slips.
    let wallet_acct = json!({"bankCode": "TRUEMONEY", "bankNumber": "081-234-5678",
        "nameTh": "ร้านกาแฟ ดีดี", "nameEn": "DD Coffee", "type": "PERSONAL"});
    let bad = json!({"bankCode": "TRUEMONEY", "bankNumber": "12345678",
        "nameTh": "ร้านกาแฟ ดีดี", "nameEn": "DD Coffee", "type": "PERSONAL"});
    let wallet_accounts = [
        ("wallet account created", j(wallet_acct)),
        ("wallet account not a phone", j(bad)),
    ];
    tp.send_each("POST", "/v2/bank-accounts", k, &[], wallet_accounts)
        .await;
    let ours = wallet_transfer_to(&t, &mut tp, "ร้านกาแฟ ดีดี", "0812345678", 2).await;
    let theirs = wallet_transfer_to(&t, &mut tp, "ร้านอื่น", "0899990000", 3).await;
    let fresh = t.tenant(10).await;
    let fresh = format!("Bearer {}", fresh.api_key);
    let nothing = wallet_transfer_to(&t, &mut tp, "ร้านกาแฟ ดีดี", "0812345678", 4).await;
    for (label, auth, w) in [
        ("truewallet account matched", k, &ours),
        ("truewallet account not matched", k, &theirs),
        ("truewallet no accounts", Some(fresh.as_str()), &nothing),
    ] {
        let body = json!({"payload": w.payload, "matchAccount": true});
        tp.post(label, "POST", "/v2/verify/truewallet", auth, body)
            .await;
    }
    let unknown_job = "/v2/verify/bank/jobs/00000000-0000-4000-8000-000000000000";
    tp.get("job unknown", "GET", unknown_job, k).await;
    let body = json!({"payload": tr.payload, "callbackUrl": "https://example.com/hook"});
    tp.post(
        "async without egress",
        "POST",
        "/v2/verify/bank/async",
        k,
        body,
    )
    .await;
    tp.check("v2");
    t.stop().await;
});

both!(v1_answers, |b: Backend| async move {
    let t = spawn(b, |_| {}).await;
    let ten = t.tenant(100).await;
    let mut tp = Tape::new(&t);
    let bearer = format!("Bearer {}", ten.api_key);
    let k = Some(bearer.as_str());
    let tr = tp.transfer("004", "014", 15050, 1).await;
    tp.get("me", "GET", "/api/v1/me", k).await;
    tp.get("unauthorized", "GET", "/api/v1/me", None).await;
    tp.get("bad key", "GET", "/api/v1/me", Some("Bearer nope"))
        .await;
    tp.get("unknown route", "GET", "/api/v1/nope", k).await;
    let once = json!({"payload": tr.payload, "checkDuplicate": true});
    tp.post("verified", "POST", "/api/v1/verify", k, once.clone())
        .await;
    tp.post("duplicate", "POST", "/api/v1/verify", k, once)
        .await;
    let by_get = format!("/api/v1/verify?payload={}", tr.payload);
    tp.get("verified by GET", "GET", &by_get, k).await;
    let unknown = slip_qr::encode_bank_slip("004", "20261123ABCDEFGHIJ");
    let png = server::slip_image::png_bytes(&tr.payload, "004").unwrap();
    let verify = [
        ("invalid request", j(json!({}))),
        (
            "invalid checkDuplicate",
            j(json!({"payload": tr.payload, "checkDuplicate": "yes"})),
        ),
        ("invalid payload", j(json!({"payload": "hello"}))),
        ("slip not found", j(json!({"payload": unknown}))),
        ("upload without QR", Body::Form("file", blank_png())),
        ("upload duplicate", Body::Form("file", png)),
    ];
    tp.send_each("POST", "/api/v1/verify", k, &[], verify).await;
    let w = wallet_transfer(&t, &mut tp).await;
    let once = json!({"payload": w.payload, "checkDuplicate": true});
    // v1 does not read `matchAccount`: the same answer shape with it.
    let other = wallet_transfer_to(&t, &mut tp, "ร้านกาแฟ ดีดี", "0812345678", 2).await;
    let with_match = json!({"payload": other.payload, "matchAccount": true});
    let wallet = [
        ("truewallet", j(once.clone())),
        ("truewallet duplicate", j(once)),
        ("truewallet matchAccount not read", j(with_match)),
    ];
    tp.send_each("POST", "/api/v1/verify/truewallet", k, &[], wallet)
        .await;
    let qr = [
        (
            "qr promptpay",
            j(json!({"type": "PROMPTPAY", "msisdn": "0812345678", "amount": 10.5})),
        ),
        ("qr invalid type", j(json!({"type": "BITCOIN"}))),
        (
            "qr invalid",
            j(json!({"type": "PROMPTPAY", "msisdn": "12"})),
        ),
    ];
    tp.send_each("POST", "/api/v1/qr/generate", k, &[], qr)
        .await;
    tp.check("v1");
    t.stop().await;
});

both!(admin_and_partner_answers, |b: Backend| async move {
    let t = spawn(b, |s| s.set_admin_token(TOKEN)).await;
    let mut tp = Tape::new(&t);
    let bearer = format!("Bearer {TOKEN}");
    let k = Some(bearer.as_str());
    tp.get("wrong token", "GET", "/admin/plans", Some("Bearer wrong"))
        .await;
    let invalid = json!({"quota": -1});
    tp.post("service invalid", "POST", "/admin/services", k, invalid)
        .await;
    let shop = json!({"name": "Shop", "quota": 100});
    let v = tp.post("service", "POST", "/admin/services", k, shop).await;
    let sid = v["data"]["id"].as_str().unwrap_or("none").to_string();
    let main = json!({"serviceId": sid, "name": "Main", "main": true});
    let v = tp.post("branch", "POST", "/admin/branches", k, main).await;
    let bid = v["data"]["id"].as_str().unwrap_or("none").to_string();
    if let Some(key) = v["data"]["apiKey"].as_str() {
        tp.mask(key, "branch-key");
    }
    let qa = json!({"serviceId": sid, "name": "QA", "sandbox": true});
    tp.post("test branch", "POST", "/admin/branches", k, qa)
        .await;
    let owner = json!({"name": "Owner"});
    let v = tp.post("user", "POST", "/admin/users", k, owner).await;
    let uid = v["data"]["id"].as_str().unwrap_or("none").to_string();
    let service = format!("/admin/services/{sid}");
    let branch = format!("/admin/branches/{bid}");
    for (label, method, path, body) in [
        (
            "service patched",
            "PATCH",
            service.clone(),
            json!({"ownerId": uid}),
        ),
        (
            "branch patched",
            "PATCH",
            branch.clone(),
            json!({"active": true, "sandbox": false}),
        ),
        (
            "key rotated",
            "POST",
            format!("{branch}/rotate-key"),
            json!({}),
        ),
    ] {
        tp.post(label, method, &path, k, body).await;
    }
    tp.get("branch audit", "GET", &format!("{branch}/audit"), k)
        .await;
    let unban = json!({"banned": false});
    tp.post(
        "user patched",
        "PATCH",
        &format!("/admin/users/{uid}"),
        k,
        unban,
    )
    .await;
    tp.get("connectors", "GET", "/admin/connectors", k).await;
    let bad = "/admin/verifications?limit=0&outcome=ok&from=27/11/2026";
    tp.get("verifications invalid", "GET", bad, k).await;
    let page = "/admin/verifications?q=1250.50&from=2026-11-23";
    tp.get("verifications", "GET", page, k).await;
    tp.get("plans", "GET", "/admin/plans", k).await;
    tp.post("plan set", "PUT", "/admin/plans/pro", k, json!({"rps": 20}))
        .await;
    let packages = [
        ("package invalid", j(json!({"quota": -1, "price": 9.999}))),
        (
            "package set",
            j(json!({"quota": 100, "durationDays": 30, "price": 990})),
        ),
    ];
    tp.send_each("PUT", "/admin/packages/basic", k, &[], packages)
        .await;
    tp.get("packages", "GET", "/admin/packages", k).await;
    let credit = format!("{service}/credit");
    let amount = json!({"amount": 1500.00, "note": "bank transfer 123"});
    tp.post("credit", "POST", &credit, k, amount).await;
    tp.get("credit history", "GET", &credit, k).await;
    let subscriptions = [
        (
            "subscription invalid",
            j(json!({"package": "basic", "autoRenew": {"onExpiry": 1}})),
        ),
        ("subscribed", j(json!({"package": "basic"}))),
    ];
    let subscription = format!("{service}/subscription");
    tp.send_each("POST", &subscription, k, &[], subscriptions)
        .await;
    let auto_renew = format!("{service}/auto-renew");
    let on = json!({"enabled": true});
    tp.post("auto-renew", "PUT", &auto_renew, k, on).await;
    tp.get("service audit", "GET", &format!("{service}/audit"), k)
        .await;
    let v = tp.post("partner", "POST", "/admin/partners", k, json!({"name": "POS", "serviceIds": [sid], "permissions": ["quota:read", "quota:write"]})).await;
    let pkey = v["data"]["apiKey"].as_str().unwrap_or("none").to_string();
    let secret = v["data"]["secret"].as_str().unwrap_or("none").to_string();
    tp.mask(&pkey, "partner-key");
    tp.mask(&secret, "partner-secret");

    // The partner API, signed.
    let now = domain::Clock::now(t.clock.as_ref()).unix_timestamp();
    for (label, method, path, body) in [
        ("partner quota", "GET", "/b2b/branch/quota", ""),
        (
            "partner quota set",
            "PUT",
            "/b2b/branch/quota",
            r#"{"limitQuota": 10}"#,
        ),
        (
            "partner quota invalid",
            "PUT",
            "/b2b/branch/quota",
            r#"{"limitQuota": 1.5}"#,
        ),
        (
            "partner adjust",
            "POST",
            "/b2b/branch/quota/adjust",
            r#"{"amount": 5}"#,
        ),
        (
            "partner below usage",
            "POST",
            "/b2b/branch/quota/adjust",
            r#"{"amount": -100}"#,
        ),
        ("partner reset", "POST", "/b2b/branch/quota/reset", ""),
    ] {
        let nonce = uuid::Uuid::new_v4().to_string();
        let ts = now.to_string();
        let sig = domain::partner::sign(
            &secret,
            &domain::partner::canonical(method, path, &ts, &nonce, body.as_bytes()),
        );
        tp.send(
            label,
            method,
            &format!("/v2{path}"),
            None,
            &[
                ("x-api-key", &pkey),
                ("x-branch-key", &bid),
                ("x-timestamp", &ts),
                ("x-nonce", &nonce),
                ("x-signature", &sig),
            ],
            Body::Json(body.to_string()),
        )
        .await;
    }
    tp.send(
        "partner unsigned",
        "GET",
        "/v2/b2b/branch/quota",
        None,
        &[("x-api-key", &pkey)],
        Body::None,
    )
    .await;

    // The branch-in-path form and the branch and bank-account operations (issue 35).
    let p1 = Signer {
        key: pkey.clone(),
        secret: secret.clone(),
        now,
    };
    p1.send(
        &mut tp,
        "partner without branch:read",
        "GET",
        "/b2b/branches",
        "",
    )
    .await;
    let v = tp.post("partner all scopes", "POST", "/admin/partners", k, json!({"name": "Reseller", "serviceIds": [sid], "permissions": ["quota:read", "quota:write", "branch:read", "branch:write", "bank-account:read", "bank-account:write"]})).await;
    let p2 = Signer {
        key: v["data"]["apiKey"].as_str().unwrap_or("none").to_string(),
        secret: v["data"]["secret"].as_str().unwrap_or("none").to_string(),
        now,
    };
    tp.mask(&p2.key, "partner2-key");
    tp.mask(&p2.secret, "partner2-secret");
    let at = format!("/b2b/branches/{bid}");
    for (label, method, path, body) in [
        ("path quota", "GET", format!("{at}/quota"), ""),
        (
            "path quota set",
            "PUT",
            format!("{at}/quota"),
            r#"{"limitQuota": 20}"#,
        ),
        (
            "path adjust",
            "POST",
            format!("{at}/quota/adjust"),
            r#"{"amount": -5}"#,
        ),
        ("path reset", "POST", format!("{at}/quota/reset"), ""),
        ("branches", "GET", "/b2b/branches".into(), ""),
        ("branch", "GET", at.clone(), ""),
        (
            "branch patched",
            "PATCH",
            at.clone(),
            r#"{"name": "Front desk", "ipAddress": "203.0.113.7"}"#,
        ),
        (
            "branch patch invalid",
            "PATCH",
            at.clone(),
            r#"{"isActive": "yes", "ipAddress": "nowhere"}"#,
        ),
        (
            "branch account added",
            "POST",
            format!("{at}/bank-accounts"),
            r#"{"bankCode": "TRUEMONEY", "bankNumber": "0812345678", "nameTh": "ร้านกาแฟ ดีดี", "nameEn": "DD Coffee", "type": "PERSONAL"}"#,
        ),
        (
            "branch account link refused",
            "POST",
            format!("{at}/bank-accounts"),
            r#"{"bankAccountId": "00000000-0000-4000-8000-000000000000"}"#,
        ),
        ("branch accounts", "GET", format!("{at}/bank-accounts"), ""),
        (
            "branch account not found",
            "DELETE",
            format!("{at}/bank-accounts/00000000-0000-4000-8000-000000000000"),
            "",
        ),
        ("main branch not deleted", "DELETE", at.clone(), ""),
        ("banks", "GET", "/b2b/banks".into(), ""),
    ] {
        p2.send(&mut tp, label, method, &path, body).await;
    }
    let v = p2
        .send(
            &mut tp,
            "branch created",
            "POST",
            "/b2b/branches",
            r#"{"name": "Kiosk", "limitQuota": 5}"#,
        )
        .await;
    let new = v["data"]["id"].as_str().unwrap_or("none").to_string();
    let body = format!(
        r#"{{"branchId": "{new}", "bankCode": "014", "bankNumber": "123-4-56789-0", "nameTh": "ร้านตัวอย่าง", "nameEn": "Sample", "type": "JURISTIC"}}"#
    );
    let v = p2
        .send(
            &mut tp,
            "bank account created",
            "POST",
            "/b2b/bank-accounts",
            &body,
        )
        .await;
    let acct = v["data"]["id"].as_str().unwrap_or("none").to_string();
    let gone = format!("/b2b/branches/{new}/bank-accounts/{acct}");
    p2.send(&mut tp, "branch account deleted", "DELETE", &gone, "")
        .await;
    p2.send(
        &mut tp,
        "branch deleted",
        "DELETE",
        &format!("/b2b/branches/{new}"),
        "",
    )
    .await;
    tp.check("admin");
    t.stop().await;
});

both!(job_and_webhook_answers, |b: Backend| async move {
    let rx = Receiver::spawn().await;
    let eg = rx.egress();
    let t = spawn(b, move |s| {
        s.set_egress(eg);
        s.set_admin_token(TOKEN);
    })
    .await;
    let ten = t.tenant(100).await;
    let mut tp = Tape::new(&t);
    let bearer = format!("Bearer {}", ten.api_key);
    let k = Some(bearer.as_str());
    let tr = tp.transfer("004", "014", 15050, 1).await;
    let tr2 = tp.transfer("004", "014", 2000, 2).await;
    let hook = rx.url("hook");
    tp.mask(&hook, "callback-url");
    let refused = json!({"payload": tr.payload, "callbackUrl": "http://example.com/hook"});
    let accepted = json!({"payload": tr.payload, "callbackUrl": hook, "matchAmount": 150.5});
    let async_path = "/v2/verify/bank/async";
    tp.post("async invalid callback", "POST", async_path, k, refused)
        .await;
    let v = tp.post("async", "POST", async_path, k, accepted).await;
    let id = v["data"]["jobId"].as_str().unwrap_or("none").to_string();
    let empty = json!({"callbackUrl": hook, "slips": []});
    tp.post("batch invalid", "POST", "/v2/verify/bank/batch", k, empty)
        .await;
    let got = rx.wait_for(1).await;
    let mut hooks = String::from("## webhook\n");
    let mut hs: Vec<(String, String)> = got[0]
        .headers
        .iter()
        .filter(|(n, _)| {
            let n = n.to_ascii_lowercase();
            !["date", "content-length", "host", "x-service-signature"].contains(&n.as_str())
        })
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
        .collect();
    hs.sort();
    for (n, v) in hs {
        hooks.push_str(&format!("{n}: {v}\n"));
    }
    hooks.push_str(&String::from_utf8_lossy(&got[0].body));
    hooks.push_str("\n\n");
    // The poll answers once the worker has saved the job with its delivery.
    let key = k.map(|b| &b[7..]).unwrap();
    t.poll_job(key, &id, |j| j["webhook"]["state"] == "delivered")
        .await;
    tp.get("job done", "GET", &format!("/v2/verify/bank/jobs/{id}"), k)
        .await;
    let admin = format!("Bearer {TOKEN}");
    let a = Some(admin.as_str());
    let unknown = "/admin/jobs/9b2f3c1e-0000-4000-8000-000000000000/redeliver";
    tp.get("redeliver unknown job", "POST", unknown, a).await;
    let redeliver = format!("/admin/jobs/{id}/redeliver");
    let force = json!({"force": true});
    tp.post("redeliver field", "POST", &redeliver, a, force)
        .await;
    tp.get("redeliver", "POST", &redeliver, a).await;
    rx.wait_for(2).await;
    tp.post(
        "batch",
        "POST",
        "/v2/verify/bank/batch",
        k,
        json!({"callbackUrl": hook, "slips": [{"payload": tr2.payload}, {"payload": tr2.payload}]}),
    )
    .await;
    tp.out.push_str(&hooks);
    tp.check("jobs");
    t.stop().await;
});

both!(cors_answers, |b: Backend| async move {
    // Off (the default): the same bytes as before CORS existed, whatever a browser sends.
    let off = spawn(b, |_| {}).await;
    let ten = off.tenant(10).await;
    let bearer = format!("Bearer {}", ten.api_key);
    let preflight = [
        ("origin", "https://shop.example"),
        ("access-control-request-method", "POST"),
        (
            "access-control-request-headers",
            "authorization,content-type,idempotency-key",
        ),
    ];
    let page = [("origin", "https://shop.example")];
    // The routes asked, and the headers of a preflight.
    let (bank, info, pf) = ("/v2/verify/bank", "/v2/info", &preflight[..]);
    let key = Some(bearer.as_str());
    let mut tp = Tape::new(&off);
    tp.send_heads(&[
        ("off: preflight", "OPTIONS", bank, None, pf),
        ("off: from a page", "GET", info, key, &page),
    ])
    .await;
    tp.check("cors-off");
    let on = TestApp::spawn_with_config(b, "[server]\ncors_origins = [\"https://shop.example\"]\n")
        .await;
    on.clock.set(start());
    let ten = on.tenant(10).await;
    let bearer = format!("Bearer {}", ten.api_key);
    let other = [
        ("origin", "https://evil.example"),
        ("access-control-request-method", "POST"),
    ];
    let key = Some(bearer.as_str());
    let mut tp = Tape::new(&on);
    tp.send_heads(&[
        ("listed: preflight", "OPTIONS", bank, None, pf),
        ("listed: from a page", "GET", info, key, &page),
        (
            "listed: v1 preflight",
            "OPTIONS",
            "/api/v1/verify",
            None,
            pf,
        ),
        ("other origin: preflight", "OPTIONS", bank, None, &other),
        ("other origin: from a page", "GET", info, key, &other[..1]),
        ("admin: preflight", "OPTIONS", "/admin/services", None, pf),
        (
            "partner: preflight",
            "OPTIONS",
            "/v2/b2b/branch/quota",
            None,
            pf,
        ),
    ])
    .await;
    tp.check("cors-on");
});

/// A TrueMoney sandbox transfer of 10 baht to this receiver, its random parts masked as the
/// `n`th.
async fn wallet_transfer_to(
    t: &TestApp,
    tp: &mut Tape<'_>,
    name: &str,
    phone: &str,
    n: usize,
) -> domain::model::WalletTransfer {
    let w = t
        .wallet_transfer(1000, Some("สมหญิง ดีใจ"), Some(name), Some(phone))
        .await;
    tp.mask(&w.payload, &format!("wallet-payload{n}"));
    tp.mask(&w.transaction_id, &format!("wallet-id{n}"));
    tp.mask(&w.sender_phone, &format!("wallet-phone{n}"));
    w
}

/// A TrueMoney sandbox transfer of 50.25 baht, its random parts masked.
async fn wallet_transfer(t: &TestApp, tp: &mut Tape<'_>) -> domain::model::WalletTransfer {
    let w = t
        .wallet_transfer(5025, Some("สมหญิง ดีใจ"), None, Some("0812345678"))
        .await;
    tp.mask(&w.payload, "wallet-payload");
    tp.mask(&w.transaction_id, "wallet-id");
    tp.mask(&w.sender_phone, "wallet-phone");
    w
}
