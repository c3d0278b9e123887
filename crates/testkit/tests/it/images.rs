//! Slips sent as images — multipart upload, Base64, URL — over HTTP, on both backends. Image
//! URLs are served by a real HTTP server on loopback, reached through the egress allow-list.

use base64::Engine;
use serde_json::{json, Value};
use testkit::{both, Backend, TestApp};

use crate::common::{assert_error, blank_png, code, png};

async fn app(b: Backend) -> TestApp {
    testkit::spawn_with_loopback_images(b).await
}

async fn upload(t: &TestApp, key: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> (u16, Value) {
    t.upload("/v2/verify/bank", key, "image", bytes, fields)
        .await
}

both!(upload_base64_and_url, |b: Backend| async move {
    let t = app(b).await;
    let ten = t.tenant(100).await;
    let tr = t.transfer("004", "014", 15050).await;
    let image = png(&tr.payload);

    let (s, v) = upload(
        &t,
        &ten.api_key,
        image.clone(),
        &[("checkDuplicate", "true"), ("matchAmount", "150.5")],
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["data"]["rawSlip"]["transRef"], tr.trans_ref);
    assert_eq!(v["data"]["isDuplicate"], false);
    assert_eq!(v["data"]["isAmountMatched"], true);

    let b64 = base64::engine::general_purpose::STANDARD.encode(&image);
    let (s, v) = t
        .verify_bank(
            &ten.api_key,
            json!({"base64": format!("data:image/png;base64,{b64}"), "checkDuplicate": true}),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["data"]["isDuplicate"], true);
    let (s, _) = t.verify_bank(&ten.api_key, json!({"base64": b64})).await;
    assert_eq!(s, 200, "without the data: prefix");

    let host = testkit::image_host(image).await;
    let (s, v) = by_url(&t, &ten.api_key, format!("{host}/slip.png")).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["data"]["rawSlip"]["payload"], tr.payload);
    t.stop().await;
});

/// `POST /v2/verify/bank` with an image URL.
async fn by_url(t: &TestApp, key: &str, url: String) -> (u16, Value) {
    t.verify_bank(key, json!({ "url": url })).await
}

both!(image_errors_use_no_quota, |b: Backend| async move {
    let t = app(b).await;
    let ten = t.tenant(100).await;
    let key = ten.api_key.as_str();
    let host = testkit::image_host(blank_png()).await;

    let (s, v) = upload(&t, key, b"just some text".to_vec(), &[]).await;
    assert_eq!((s, code(&v)), (400, "INVALID_IMAGE_FORMAT"));
    let (s, v) = upload(&t, key, vec![0u8; 4 * 1024 * 1024 + 1], &[]).await;
    assert_eq!((s, code(&v)), (400, "IMAGE_SIZE_TOO_LARGE"));
    let (s, v) = upload(&t, key, blank_png(), &[]).await;
    assert_error(s, &v, 404, "SLIP_NOT_FOUND", "no QR code");
    let (s, v) = upload(&t, key, blank_png(), &[("checkDuplicate", "maybe")]).await;
    assert_eq!((s, code(&v)), (400, "VALIDATION_ERROR"));

    // A PromptPay payment QR is explained.
    let pp = "00020101021129370016A000000677010111011300668123456785802TH53037645406150.506304";
    let pp = format!("{pp}{:04X}", slip_qr::crc16_ccitt_false(pp.as_bytes()));
    let (s, v) = upload(&t, key, png(&pp), &[]).await;
    assert_error(s, &v, 404, "SLIP_NOT_FOUND", "PromptPay");

    let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; 4 * 1024 * 1024 + 3]);
    t.verify_bank_err(key, json!({"base64": big}), 400, "IMAGE_SIZE_TOO_LARGE")
        .await;
    t.verify_bank_err(
        key,
        json!({"base64": "!!!not base64"}),
        400,
        "INVALID_IMAGE_FORMAT",
    )
    .await;

    let refused_urls = [
        (
            "ftp://example.com/a.png".to_string(),
            "URL_PROTOCOL_NOT_ALLOWED",
        ),
        (
            "http://169.254.169.254/latest".into(),
            "URL_INVALID_IP_RANGE",
        ),
        ("http://10.1.2.3/a.png".into(), "URL_INVALID_IP_RANGE"),
        (format!("{host}/missing"), "IMAGE_URL_UNREACHABLE"),
        (format!("{host}/text"), "INVALID_IMAGE_TYPE"),
        (format!("{host}/huge"), "IMAGE_SIZE_TOO_LARGE"),
    ];
    for (url, want) in refused_urls {
        let (s, v) = by_url(&t, key, url.clone()).await;
        assert_eq!((s, code(&v)), (400, want), "{url}");
    }
    t.verify_bank_err(
        key,
        json!({"url": format!("{host}/slip.png"), "payload": "x"}),
        400,
        "VALIDATION_ERROR",
    )
    .await;

    let (_, v) = t.get("/v2/info", Some(key)).await;
    assert_eq!(v["data"]["application"]["quota"]["used"], 0);
    t.stop().await;
});

both!(urls_need_the_allow_list, |b: Backend| async move {
    // The production default: loopback is refused even though the server is right there.
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let host = testkit::image_host(blank_png()).await;
    let (s, v) = by_url(&t, &ten.api_key, format!("{host}/slip.png")).await;
    assert_eq!((s, code(&v)), (400, "URL_INVALID_IP_RANGE"));
    t.stop().await;
});
