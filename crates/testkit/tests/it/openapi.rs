//! The OpenAPI document against the code and the running server: every routed (path, method)
//! is documented (and nothing else is), the documented examples are what the server answers,
//! and `/docs` and `/openapi.json` are served. The interface does not depend on the backend,
//! so these run on SQLite only.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use testkit::{Backend, TestApp};

use crate::common::partner_sign;

// ---- routes as the router registered them ---------------------------------------------------

/// Routes served but deliberately left out of the document: pages, not API operations.
const EXEMPT: &[(&str, &str)] = &[("GET", "/docs")];

/// Every (path, method) the router serves, as its registration recorded it.
fn routed() -> BTreeSet<(String, String)> {
    api::routes_registered()
        .into_iter()
        .map(|r| (r.path, r.method.to_ascii_lowercase()))
        .collect()
}

#[test]
fn the_registry_sees_the_known_routes_and_only_pages_are_exempt() {
    let r = routed();
    for (p, m) in [
        ("/health", "get"),
        ("/v2/verify/bank", "post"),
        ("/v2/bank-accounts/{id}", "delete"),
        ("/v2/b2b/branch/quota", "put"),
        ("/api/v1/verify", "get"),
        ("/api/v1/verify", "post"),
        ("/admin/plans/{name}", "put"),
        ("/openapi.json", "get"),
        ("/docs", "get"),
    ] {
        assert!(r.contains(&(p.to_string(), m.to_string())), "{m} {p}");
    }
    assert!(r.len() >= 30, "{r:?}");
    let exempt: Vec<(&str, String)> = api::routes_registered()
        .into_iter()
        .filter(|r| !r.documented)
        .map(|r| (r.method, r.path))
        .collect();
    let expected: Vec<(&str, String)> = EXEMPT.iter().map(|(m, p)| (*m, p.to_string())).collect();
    assert_eq!(exempt, expected, "routes registered outside the document");
}

async fn fetch_doc(t: &TestApp) -> Value {
    let resp = get_served(t, "/openapi.json", "application/json").await;
    resp.json().await.expect("JSON")
}

/// GETs `path` without a key, asserting a 200 whose content type starts with `content_type`.
async fn get_served(t: &TestApp, path: &str, content_type: &str) -> reqwest::Response {
    let resp = t.get_response(path, None).await;
    assert_eq!(resp.status().as_u16(), 200, "{path}");
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert!(ct.starts_with(content_type), "{path}: {ct}");
    resp
}

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_is_missing_from_the_document() {
    let t = TestApp::spawn(Backend::Sqlite).await;
    let doc = fetch_doc(&t).await;
    let paths = doc["paths"].as_object().expect("paths");
    let routed = routed();
    let mut missing = Vec::new();
    for (p, m) in &routed {
        if EXEMPT.contains(&(m.to_ascii_uppercase().as_str(), p.as_str())) {
            continue;
        }
        if paths.get(p).and_then(|i| i.get(m)).is_none() {
            missing.push(format!("{} {p}", m.to_uppercase()));
        }
    }
    assert!(
        missing.is_empty(),
        "routes missing from /openapi.json: {missing:?}"
    );
    // And nothing is documented that is not routed.
    let mut extra = Vec::new();
    for (p, item) in paths {
        for m in METHODS {
            if item.get(m).is_some() && !routed.contains(&(p.clone(), m.to_string())) {
                extra.push(format!("{} {p}", m.to_uppercase()));
            }
        }
    }
    assert!(extra.is_empty(), "documented but not routed: {extra:?}");
    // Every operation has a summary, a success response and (but for the public ones) errors
    // with an example per listed code.
    for (p, item) in paths {
        for m in METHODS {
            let Some(op) = item.get(m) else { continue };
            assert!(op["summary"].is_string(), "{m} {p}: no summary");
            let responses = op["responses"].as_object().expect("responses");
            assert!(
                responses.keys().any(|s| s.starts_with('2')),
                "{m} {p}: no success response"
            );
            let public = ["/health", "/openapi.json", "/docs"].contains(&p.as_str());
            assert_eq!(
                responses.keys().any(|s| s.starts_with('4')),
                !public,
                "{m} {p}: error responses"
            );
            for (status, r) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    let ex = r["content"]["application/json"]["examples"]
                        .as_object()
                        .unwrap_or_else(|| panic!("{m} {p} {status}: no examples"));
                    assert!(!ex.is_empty(), "{m} {p} {status}: no examples");
                }
            }
            if !public {
                assert!(op["security"].is_array(), "{m} {p}: no security");
            }
        }
    }
    t.stop().await;
}

// ---- examples against the server -----------------------------------------------------------

/// Same keys recursively; arrays compared item by item against the example's first item;
/// scalars of the same JSON type; `null` on either side matches anything (nullable fields).
fn same_shape(doc: &Value, got: &Value, at: &str) -> Result<(), String> {
    match (doc, got) {
        (Value::Null, _) | (_, Value::Null) => Ok(()),
        (Value::Object(a), Value::Object(b)) => {
            let ka: BTreeSet<&String> = a.keys().collect();
            let kb: BTreeSet<&String> = b.keys().collect();
            if ka != kb {
                return Err(format!(
                    "{at}: keys differ: documented {ka:?}, served {kb:?}"
                ));
            }
            for (k, v) in a {
                same_shape(v, &b[k], &format!("{at}/{k}"))?;
            }
            Ok(())
        }
        (Value::Array(a), Value::Array(b)) => match a.first() {
            Some(first) => b
                .iter()
                .enumerate()
                .try_for_each(|(i, v)| same_shape(first, v, &format!("{at}/{i}"))),
            None => Ok(()),
        },
        (Value::Bool(_), Value::Bool(_))
        | (Value::Number(_), Value::Number(_))
        | (Value::String(_), Value::String(_)) => Ok(()),
        _ => Err(format!("{at}: documented {doc}, served {got}")),
    }
}

/// Whether `got` fits the documented `schema`: every served key is a documented property,
/// every required property is served, types agree (`$ref`, `oneOf`, `["T", "null"]`, arrays
/// and free-form objects resolved against `doc`).
fn fits(doc: &Value, schema: &Value, got: &Value, at: &str) -> Result<(), String> {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or_default();
        return fits(doc, &doc["components"]["schemas"][name], got, at);
    }
    if let Some(alts) = schema["oneOf"].as_array() {
        return alts
            .iter()
            .find_map(|s| fits(doc, s, got, at).ok())
            .ok_or_else(|| format!("{at}: {got} matches no alternative of {schema}"));
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()), // free-form
    };
    let ok = types.iter().any(|t| match *t {
        "null" => got.is_null(),
        "object" => got.is_object(),
        "array" => got.is_array(),
        "string" => got.is_string(),
        "boolean" => got.is_boolean(),
        "integer" => got.is_i64() || got.is_u64(),
        "number" => got.is_number(),
        _ => true,
    });
    if !ok {
        return Err(format!("{at}: served {got}, documented type {types:?}"));
    }
    match got {
        Value::Object(m) => {
            let Some(props) = schema["properties"].as_object() else {
                return Ok(()); // an object documented without properties
            };
            for k in m.keys() {
                if !props.contains_key(k) {
                    return Err(format!("{at}: served key {k} is not in the schema"));
                }
            }
            for r in schema["required"].as_array().into_iter().flatten() {
                let r = r.as_str().unwrap_or_default();
                if !m.contains_key(r) {
                    return Err(format!("{at}: required {r} is not served"));
                }
            }
            for (k, v) in m {
                fits(doc, &props[k], v, &format!("{at}/{k}"))?;
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| fits(doc, &schema["items"], v, &format!("{at}/{i}"))),
        _ => Ok(()),
    }
}

/// The documented example: `example` (name `None`) or `examples[name].value`.
fn example<'a>(
    doc: &'a Value,
    path: &str,
    method: &str,
    status: u16,
    name: Option<&str>,
) -> &'a Value {
    let content =
        &doc["paths"][path][method]["responses"][status.to_string()]["content"]["application/json"];
    let v = match name {
        None => &content["example"],
        Some(n) => &content["examples"][n]["value"],
    };
    assert!(
        !v.is_null(),
        "no documented example {name:?} for {method} {path} {status}"
    );
    v
}

struct Case {
    /// The documented operation and response.
    path: &'static str,
    method: &'static str,
    status: u16,
    example: Option<&'static str>,
    /// What is actually sent: the URL (with ids and query) and body.
    url: String,
    key: Option<String>,
    body: Option<Value>,
    /// JSON pointers whose values must equal the example's (the rest may differ).
    exact: &'static [&'static str],
    /// No documented example to compare: only the response schema is checked.
    schema_only: bool,
}

impl Case {
    fn new(
        path: &'static str,
        method: &'static str,
        status: u16,
        example: Option<&'static str>,
        url: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Case {
        Case {
            path,
            method,
            status,
            example,
            url: url.to_string(),
            key: key.map(String::from),
            body,
            exact: &[],
            schema_only: false,
        }
    }

    /// A `GET` of the documented path itself, without a body.
    fn get(
        path: &'static str,
        status: u16,
        example: Option<&'static str>,
        key: Option<&str>,
    ) -> Case {
        Case::new(path, "get", status, example, path, key, None)
    }

    /// A `POST` creating a record in an admin collection: a 200 checked against the schema.
    fn created(path: &'static str, key: Option<&str>, body: Value) -> Case {
        Case::new(path, "post", 200, None, path, key, Some(body)).schema_only()
    }

    fn exact(self, exact: &'static [&'static str]) -> Case {
        Case { exact, ..self }
    }

    fn schema_only(self) -> Case {
        Case {
            schema_only: true,
            ..self
        }
    }
}

/// Sends the case and compares the answer with the document; returns what differs.
async fn check(t: &TestApp, doc: &Value, c: &Case) -> (Vec<String>, Value) {
    let (status, got) = send(t, c).await;
    (compare(doc, c, status, &got), got)
}

/// `check`, adding what differs to `failures`; the answer's `data.id`.
async fn check_id(t: &TestApp, doc: &Value, c: &Case, failures: &mut Vec<String>) -> String {
    let (f, v) = check(t, doc, c).await;
    failures.extend(f);
    v["data"]["id"].as_str().unwrap_or("none").to_string()
}

/// What differs between the documented response of `c` and the served one.
fn compare(doc: &Value, c: &Case, status: u16, got: &Value) -> Vec<String> {
    let mut failures = Vec::new();
    let what = format!(
        "{} {} (documented {} {} {:?})",
        c.method.to_uppercase(),
        c.url,
        c.path,
        c.status,
        c.example
    );
    if status != c.status {
        failures.push(format!("{what}: status {status}: {got}"));
        return failures;
    }
    if !c.schema_only {
        let want = example(doc, c.path, c.method, c.status, c.example);
        if let Err(e) = same_shape(want, got, "") {
            failures.push(format!("{what}: {e}\n  served: {got}"));
        }
        for p in c.exact {
            if want.pointer(p) != got.pointer(p) {
                failures.push(format!(
                    "{what}: {p} documented {:?}, served {:?}",
                    want.pointer(p),
                    got.pointer(p)
                ));
            }
        }
    }
    let schema = &doc["paths"][c.path][c.method]["responses"][c.status.to_string()]["content"]
        ["application/json"]["schema"];
    if schema.is_null() {
        failures.push(format!("{what}: no schema"));
    } else if let Err(e) = fits(doc, schema, got, "") {
        failures.push(format!("{what}: schema: {e}\n  served: {got}"));
    }
    failures
}

async fn send(t: &TestApp, c: &Case) -> (u16, Value) {
    let m = reqwest::Method::from_bytes(c.method.to_uppercase().as_bytes()).unwrap();
    let mut req = t.http.request(m, format!("{}{}", t.base, c.url));
    if let Some(k) = &c.key {
        req = req.bearer_auth(k);
    }
    if let Some(b) = &c.body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_string());
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    let v = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("{} {}: not JSON: {text}", c.method, c.url));
    (status, v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documented_examples_match_the_server() {
    let t = TestApp::spawn(Backend::Sqlite).await;
    let doc = fetch_doc(&t).await;
    let ten = t.tenant(100).await;
    let tr = t.transfer("004", "014", 15050).await;
    let tr2 = t.transfer("004", "014", 9900).await;
    let unknown = "5b1f7a3e-9c1d-4d8e-8f4a-2b6c7d8e9f01";
    let key = Some(ten.api_key.as_str());
    // A test branch answers /v2/info in the same documented shape (our additions included).
    let (_, test_key) = t
        .app
        .services
        .admin()
        .create_branch(&services::admin::NewBranch {
            service_id: ten.service_id.clone(),
            name: "QA".into(),
            sandbox: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let schemas = &doc["components"]["schemas"];
    assert!(schemas["InfoBranch"]["properties"]["sandbox"].is_object());
    assert!(schemas["InfoQuota"]["properties"]["sandboxUsed"].is_object());
    assert!(schemas["BranchView"]["properties"]["sandbox"].is_object());
    let case = Case::new;
    let get = Case::get;
    const V2_ERROR: &[&str] = &["/success", "/error/code", "/error/message"];
    const V1_ERROR: &[&str] = &["/status", "/message", "/data"];
    let cases = vec![
        get("/health", 200, None, None).exact(&["/success", "/data/status"]),
        get("/v2/banks", 200, None, key).exact(&["/success", "/message"]),
        get("/v2/banks", 401, Some("MISSING_API_KEY"), None).exact(V2_ERROR),
        get("/v2/info", 200, None, key).exact(&["/success", "/message"]),
        get("/v2/info", 200, None, Some(&test_key)).exact(&["/success", "/message"]),
        get("/v2/info", 401, Some("INVALID_API_KEY"), Some("not-a-key")).exact(V2_ERROR),
        case(
            "/v2/verify/bank",
            "post",
            400,
            Some("VALIDATION_ERROR"),
            "/v2/verify/bank",
            key,
            Some(json!({})),
        )
        .exact(V2_ERROR),
        case(
            "/v2/verify/bank",
            "post",
            200,
            None,
            "/v2/verify/bank",
            key,
            Some(json!({ "payload": tr.payload })),
        )
        .exact(&["/success", "/message", "/data/isDuplicate"]),
        case(
            "/v2/verify/bank/jobs/{job_id}",
            "get",
            404,
            Some("JOB_NOT_FOUND"),
            &format!("/v2/verify/bank/jobs/{unknown}"),
            key,
            None,
        )
        .exact(V2_ERROR),
        case(
            "/v2/bank-accounts/{id}",
            "get",
            404,
            Some("BANK_ACCOUNT_NOT_FOUND"),
            &format!("/v2/bank-accounts/{unknown}"),
            key,
            None,
        )
        .exact(V2_ERROR),
        get("/v2/b2b/branch/quota", 401, Some("MISSING_API_KEY"), None).exact(V2_ERROR),
        // The admin API is off without an admin token.
        get("/admin/plans", 404, Some("NOT_FOUND"), None).exact(V2_ERROR),
        get("/api/v1/me", 200, None, key).exact(&["/status"]),
        get("/api/v1/me", 401, Some("unauthorized"), None).exact(V1_ERROR),
        get("/api/v1/verify", 400, Some("invalid_request"), key).exact(V1_ERROR),
        case(
            "/api/v1/verify",
            "get",
            400,
            Some("invalid_check_duplicate"),
            "/api/v1/verify?payload=x&checkDuplicate=maybe",
            key,
            None,
        )
        .exact(V1_ERROR),
        case(
            "/api/v1/verify",
            "get",
            200,
            None,
            &format!("/api/v1/verify?payload={}", tr2.payload),
            key,
            None,
        )
        .exact(&["/status"]),
        case(
            "/api/v1/qr/generate",
            "post",
            200,
            None,
            "/api/v1/qr/generate",
            key,
            Some(json!({ "type": "PROMPTPAY", "msisdn": "0812345678" })),
        )
        .exact(&["/status", "/data/mime"]),
        case(
            "/api/v1/qr/generate",
            "post",
            400,
            Some("invalid_type"),
            "/api/v1/qr/generate",
            key,
            Some(json!({ "type": "BITCOIN" })),
        )
        .exact(V1_ERROR),
    ];
    let mut failures = Vec::new();
    for c in &cases {
        failures.extend(check(&t, &doc, c).await.0);
    }
    // Schema-only: a bank account's life.
    let k = Some(ten.api_key.as_str());
    let account = json!({
        "bankCode": "014",
        "bankNumber": "1234567890",
        "nameTh": "บริษัท ร้านตัวอย่าง จำกัด",
        "nameEn": "Sample Shop Co., Ltd.",
        "type": "JURISTIC",
    });
    let create = Case::new(
        "/v2/bank-accounts",
        "post",
        201,
        None,
        "/v2/bank-accounts",
        k,
        Some(account),
    );
    let (f, created) = check(&t, &doc, &create.schema_only()).await;
    failures.extend(f);
    let id = created["data"]["id"].as_str().unwrap_or("none").to_string();
    let one = format!("/v2/bank-accounts/{id}");
    for c in [
        Case::new(
            "/v2/bank-accounts",
            "get",
            200,
            None,
            "/v2/bank-accounts",
            k,
            None,
        ),
        Case::new("/v2/bank-accounts/{id}", "get", 200, None, &one, k, None),
        Case::new(
            "/v2/bank-accounts/{id}",
            "patch",
            200,
            None,
            &one,
            k,
            Some(json!({ "extraVerify": null })),
        ),
        Case::new("/v2/bank-accounts/{id}", "delete", 200, None, &one, k, None),
    ] {
        failures.extend(check(&t, &doc, &c.schema_only()).await.0);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    t.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_answers_fit_the_document() {
    const TOKEN: &str = "openapi-test-admin-token-0123456789abcdef";
    let t = TestApp::spawn_with(Backend::Sqlite, |s| s.set_admin_token(TOKEN)).await;
    let doc = fetch_doc(&t).await;
    let k = Some(TOKEN);
    let mut failures = Vec::new();
    let shop = json!({ "name": "Shop", "quota": 100 });
    let service = Case::created("/admin/services", k, shop);
    let sid = check_id(&t, &doc, &service, &mut failures).await;
    let qa = json!({ "serviceId": sid, "name": "QA", "sandbox": true });
    check_id(
        &t,
        &doc,
        &Case::created("/admin/branches", k, qa),
        &mut failures,
    )
    .await;
    let main = json!({ "serviceId": sid, "name": "Main", "main": true });
    let branch = Case::created("/admin/branches", k, main);
    let bid = check_id(&t, &doc, &branch, &mut failures).await;
    let owner = json!({ "name": "Owner" });
    let user = Case::created("/admin/users", k, owner);
    let uid = check_id(&t, &doc, &user, &mut failures).await;
    for c in [
        Case::new(
            "/admin/services/{id}",
            "patch",
            200,
            None,
            &format!("/admin/services/{sid}"),
            k,
            Some(json!({ "ownerId": uid })),
        ),
        Case::new(
            "/admin/branches/{id}",
            "patch",
            200,
            None,
            &format!("/admin/branches/{bid}"),
            k,
            Some(json!({ "active": true, "sandbox": false })),
        ),
        Case::new(
            "/admin/branches/{id}/rotate-key",
            "post",
            200,
            None,
            &format!("/admin/branches/{bid}/rotate-key"),
            k,
            Some(json!({})),
        ),
        Case::new(
            "/admin/branches/{id}/audit",
            "get",
            200,
            None,
            &format!("/admin/branches/{bid}/audit"),
            k,
            None,
        ),
        Case::new(
            "/admin/users/{id}",
            "patch",
            200,
            None,
            &format!("/admin/users/{uid}"),
            k,
            Some(json!({ "banned": false })),
        ),
        Case::new(
            "/admin/partners",
            "post",
            200,
            None,
            "/admin/partners",
            k,
            Some(json!({ "name": "POS", "serviceIds": [sid], "permissions": ["quota:read"] })),
        ),
        Case::new("/admin/plans", "get", 200, None, "/admin/plans", k, None),
        Case::new(
            "/admin/plans/{name}",
            "put",
            200,
            None,
            "/admin/plans/pro",
            k,
            Some(json!({ "rps": 20 })),
        ),
        Case::new(
            "/admin/services",
            "post",
            400,
            Some("VALIDATION_ERROR"),
            "/admin/services",
            k,
            Some(json!({})),
        ),
        Case::new(
            "/admin/plans",
            "get",
            401,
            Some("INVALID_API_KEY"),
            "/admin/plans",
            Some("wrong"),
            None,
        ),
    ] {
        failures.extend(check(&t, &doc, &c.schema_only()).await.0);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    t.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docs_page_and_document_are_served_without_a_key() {
    let t = TestApp::spawn(Backend::Sqlite).await;
    let resp = get_served(&t, "/docs", "text/html").await;
    let html = resp.text().await.expect("body");
    assert!(html.contains("/openapi.json"), "{html}");
    // Self-contained: no external scripts or styles.
    assert!(!html.contains("<script src"), "external script");
    assert!(!html.contains("<link "), "external stylesheet");
    let doc = fetch_doc(&t).await;
    // `OPENAPI_DUMP=path` writes the served document (to look at it or feed a generator).
    if let Ok(path) = std::env::var("OPENAPI_DUMP") {
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).expect("dump");
    }
    let version = doc["openapi"].as_str().expect("openapi version");
    assert!(version.starts_with("3.1."), "{version}");
    let schemes = doc["components"]["securitySchemes"]
        .as_object()
        .expect("security schemes");
    for s in [
        "bearerAuth",
        "adminToken",
        "partnerKey",
        "branchKey",
        "partnerTimestamp",
        "partnerNonce",
        "partnerSignature",
    ] {
        assert!(schemes.contains_key(s), "{s}");
    }
    assert_eq!(
        doc["paths"]["/v2/b2b/branch/quota"]["put"]["security"][0]
            .as_object()
            .map(|o| o.len()),
        Some(5),
        "a partner request carries all five headers"
    );
    t.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partner_answers_fit_the_document() {
    use domain::Clock;
    let t = TestApp::spawn(Backend::Sqlite).await;
    let doc = fetch_doc(&t).await;
    let ten = t.tenant(100).await;
    let (p, key) = t.partner(&ten.service_id, "quota:read,quota:write").await;
    let mut failures = Vec::new();
    for (method, path, body, status, example) in [
        ("GET", "/b2b/branch/quota", "", 200, None),
        (
            "PUT",
            "/b2b/branch/quota",
            r#"{"limitQuota":50}"#,
            200,
            None,
        ),
        (
            "POST",
            "/b2b/branch/quota/adjust",
            r#"{"amount":5}"#,
            200,
            None,
        ),
        ("POST", "/b2b/branch/quota/reset", "", 200, None),
        (
            "PUT",
            "/b2b/branch/quota",
            "{}",
            400,
            Some("VALIDATION_ERROR"),
        ),
    ] {
        let ts = t.clock.now().unix_timestamp().to_string();
        let nonce = uuid::Uuid::new_v4().to_string();
        let sig = partner_sign(method, path, &ts, &nonce, &p.secret, body);
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let resp = t
            .http
            .request(m, format!("{}/v2{path}", t.base))
            .header("X-API-Key", &key)
            .header("X-Branch-Key", ten.branch_id.as_str())
            .header("X-Timestamp", &ts)
            .header("X-Nonce", &nonce)
            .header("X-Signature", sig)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("request");
        let got_status = resp.status().as_u16();
        let got: Value = resp.json().await.expect("JSON");
        let doc_path: &'static str = match path {
            "/b2b/branch/quota" => "/v2/b2b/branch/quota",
            "/b2b/branch/quota/adjust" => "/v2/b2b/branch/quota/adjust",
            _ => "/v2/b2b/branch/quota/reset",
        };
        let c = Case::new(
            doc_path,
            if method == "GET" {
                "get"
            } else if method == "PUT" {
                "put"
            } else {
                "post"
            },
            status,
            example,
            path,
            None,
            None,
        );
        let c = if example.is_some() {
            c.exact(&["/success", "/error/code"])
        } else {
            c.schema_only()
        };
        failures.extend(compare(&doc, &c, got_status, &got));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    t.stop().await;
}

/// `Idempotency-Key` is documented on every route that takes it, with its 409 and 422.
#[tokio::test]
async fn idempotency_key_is_documented() {
    let t = TestApp::spawn(Backend::Sqlite).await;
    let doc = fetch_doc(&t).await;
    for (path, v1) in [
        ("/v2/verify/bank", false),
        ("/v2/verify/truewallet", false),
        ("/v2/verify/bank/async", false),
        ("/v2/verify/bank/batch", false),
        ("/api/v1/verify", true),
    ] {
        let op = &doc["paths"][path]["post"];
        let params = op["parameters"].as_array().expect(path);
        assert!(
            params
                .iter()
                .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header"),
            "{path}"
        );
        for (status, code) in [
            ("409", "IDEMPOTENCY_KEY_IN_USE"),
            ("422", "IDEMPOTENCY_KEY_REUSED"),
        ] {
            let code = if v1 {
                code.to_ascii_lowercase()
            } else {
                code.to_string()
            };
            let examples = &op["responses"][status]["content"]["application/json"]["examples"];
            assert!(examples.get(&code).is_some(), "{path} {status} {code}");
        }
    }
    t.stop().await;
}
