//! Issue 17 (hardening): no input shape may cost the server its memory. Crafted image shapes
//! are refused from the header, decodes wait for room in the shared memory budget (then 429),
//! one tenant's slow uploads leave the others slots, and multipart streams are capped as they
//! arrive (part headers, text fields, the whole stream).

use base64::Engine;
use serde_json::{json, Value};
use std::time::Duration;
use testkit::{both, Backend, TestApp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{code, refused_retry_after};

/// A PNG header declaring `w`×`h` grey pixels, then a short zlib stream of zero rows: tiny
/// bytes, an enormous image (the refusal must come from the header).
fn crafted_png(w: u32, h: u32) -> Vec<u8> {
    reader::probe::png(w, h, false, 1024)
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

async fn upload(t: &TestApp, key: &str, bytes: Vec<u8>) -> (u16, Value) {
    t.upload("/v2/verify/bank", key, "image", bytes, &[]).await
}

both!(
    probe_shapes_are_refused_on_every_input,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        for (w, h) in [
            (39_000_000, 1),
            (1, 39_000_000),
            (100, 399_000),
            (16_384, 600),
        ] {
            let png = crafted_png(w, h);
            assert!(png.len() < 2_000);
            let (s, v) = upload(&t, &ten.api_key, png.clone()).await;
            assert_eq!(
                (s, code(&v)),
                (400, "IMAGE_SIZE_TOO_LARGE"),
                "{w}×{h} upload: {v}"
            );
            // A small JSON body (no upload slot) takes the same checks.
            let (s, v) = t
                .verify_bank(&ten.api_key, json!({ "base64": b64(&png) }))
                .await;
            assert_eq!(
                (s, code(&v)),
                (400, "IMAGE_SIZE_TOO_LARGE"),
                "{w}×{h} base64: {v}"
            );
        }
        // Nothing was charged for the refusals.
        let (_, info) = t.get("/v2/info", Some(&ten.api_key)).await;
        assert_eq!(
            info["data"]["application"]["quota"]["used"].as_i64(),
            Some(0),
            "{info}"
        );
    }
);

both!(
    a_decode_without_room_in_the_budget_is_429,
    |b: Backend| async move {
        let t = TestApp::spawn_with_config(b, "[limits]\ndecode_wait_secs = 1\n").await;
        let ten = t.tenant(100).await;
        let tr = t.transfer("004", "014", 15050).await;
        let png = server::slip_image::png_bytes(&tr.payload, "004").unwrap();
        let body = json!({ "base64": b64(&png) });
        // Every byte of the budget taken (as by a decode larger than all of it).
        let held = t.hold_decode_budget().await;
        let req = t.http.post(format!("{}/v2/verify/bank", t.base));
        let req = req.bearer_auth(&ten.api_key).json(&body);
        let v = refused_retry_after(req, 429, "1").await;
        assert_eq!(code(&v), "RATE_LIMIT_EXCEEDED", "{v}");
        // The same for an upload.
        let (s, v) = upload(&t, &ten.api_key, png.clone()).await;
        assert_eq!((s, code(&v)), (429, "RATE_LIMIT_EXCEEDED"), "{v}");
        drop(held);
        t.verify_bank_ok(&ten.api_key, body).await;
        // Room given back after the decode.
        assert_eq!(t.app.services.decode_budget().available_kib(), 256 * 1024);
    }
);

/// A request whose head and first body bytes are sent, then nothing: it holds its slot.
async fn stalled_upload(t: &TestApp, key: &str) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(t.addr).await.unwrap();
    let head = format!(
        "POST /v2/verify/bank HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: 1000000\r\n\r\n\
         --XyZ\r\nContent-Disposition: form-data; name=\"image\"; filename=\"s.png\"\r\n\r\n"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

both!(
    one_tenants_slow_uploads_leave_the_others_slots,
    |b: Backend| async move {
        let t = TestApp::spawn_with_config(
            b,
            "[server]\nmax_uploads = 4\n[limits]\nmax_uploads_per_service = 2\n",
        )
        .await;
        let greedy = t.tenant(100).await;
        let other = t.tenant(100).await;
        // The greedy tenant starts as many trickling uploads as there are slots.
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(stalled_upload(&t, &greedy.api_key).await);
        }
        // Two hold slots (its share); the other two wait on the tenant's own queue.
        for _ in 0..200 {
            if t.app.services.uploads().available() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(t.app.services.uploads().available(), 2);
        // Another tenant's upload is read and answered while they stall (they would hold their
        // slots for the 30 s body deadline).
        let tr = t.transfer("004", "014", 15050).await;
        let png = server::slip_image::png_bytes(&tr.payload, "004").unwrap();
        let started = std::time::Instant::now();
        let (s, v) = upload(&t, &other.api_key, png).await;
        assert_eq!(s, 200, "{v}");
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(t.app.services.uploads().available(), 2);
        drop(held);
    }
);

/// Sends `head` then body chunks from `next` until the server answers; returns the answer
/// (status line, headers, body) and how many body bytes had been written when it came.
///
/// One task, reading first: before each chunk it takes whatever answer bytes have arrived, so
/// the count is what the client had written when the answer reached its socket, not when a
/// busy machine got round to a reader task (the writer alone can fill several MB of loopback
/// buffers while the server drains after answering).
async fn send_until_answered(
    t: &TestApp,
    head: String,
    mut next: impl FnMut(usize) -> Option<Vec<u8>> + Send + 'static,
) -> (String, usize) {
    let s = tokio::net::TcpStream::connect(t.addr).await.unwrap();
    let (mut rd, mut wr) = s.into_split();
    wr.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let mut sent = 0usize;
    let mut sent_at_answer = None;
    let mut writing = true;
    // The answer comes early, while the client is still sending.
    while !String::from_utf8_lossy(&answer).contains("}") {
        let chunk = if writing { next(sent) } else { None };
        writing = chunk.is_some();
        let read = tokio::time::timeout(Duration::from_secs(20), rd.read(&mut buf));
        tokio::select! {
            biased;
            r = read => match r {
                Ok(Ok(n)) if n > 0 => {
                    sent_at_answer.get_or_insert(sent);
                    // A write cut off by the answer is not resumed: the client stops.
                    writing = false;
                    answer.extend_from_slice(&buf[..n]);
                }
                _ => break,
            },
            w = async { wr.write_all(chunk.as_deref().unwrap_or_default()).await }, if writing => {
                match w {
                    Ok(()) => {
                        let before = sent;
                        sent += chunk.map_or(0, |c| c.len());
                        // Paced (20 ms a MiB, so 16 MB take at least 0.3 s): what is measured is
                        // how much the server reads before it answers, not how far a loopback
                        // client gets ahead of a server slowed down by a busy machine.
                        if sent >> 20 > before >> 20 {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                    Err(_) => writing = false,
                }
            }
        }
    }
    (
        String::from_utf8_lossy(&answer).to_string(),
        sent_at_answer.unwrap_or(sent),
    )
}

/// Chunked request head for a multipart POST.
fn chunked_head(path: &str, key: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: multipart/form-data; boundary=XyZ\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
}

fn http_chunk(data: &[u8]) -> Vec<u8> {
    [format!("{:x}\r\n", data.len()).as_bytes(), data, b"\r\n"].concat()
}

/// At most this much is ever offered by the streaming tests (the probe sent 1.5 GB).
const CLIENT_CAP: usize = 64 << 20;

/// A stream's chunks: `first`, then 64 KiB of `filler` at a time, up to `CLIENT_CAP`.
fn endless(first: Vec<u8>, filler: u8) -> impl FnMut(usize) -> Option<Vec<u8>> {
    move |sent| match sent {
        0 => Some(http_chunk(&first)),
        _ if sent >= CLIENT_CAP => None,
        _ => Some(http_chunk(&vec![filler; 64 * 1024])),
    }
}

/// A multipart text part named `name`: its head, `len` bytes of `filler`, and the line end.
fn text_part(name: &str, filler: u8, len: usize) -> Vec<u8> {
    let mut part =
        format!("--XyZ\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n").into_bytes();
    part.extend(std::iter::repeat_n(filler, len));
    part.extend_from_slice(b"\r\n");
    part
}

/// A 400 naming `what`, answered before 16 MB of the stream were sent.
#[track_caller]
fn refused_early(answer: &str, sent: usize, what: &str) {
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains(what), "{answer}");
    assert!(sent < 16 << 20, "answered only after {sent} bytes");
}

both!(
    endless_part_headers_are_refused_early,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let head = b"--XyZ\r\nContent-Disposition: form-data; name=\"image\"\r\nX-Pad: ";
        let chunks = endless(head.to_vec(), b'a');
        let request = chunked_head("/v2/verify/bank", &ten.api_key);
        let (answer, sent) = send_until_answered(&t, request, chunks).await;
        assert!(answer.contains("VALIDATION_ERROR"), "{answer}");
        refused_early(&answer, sent, "headers must be at most 8192 bytes");
    }
);

both!(
    v1_text_fields_are_capped_by_what_they_may_hold,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        // The probe: 20 text fields of 5.6 MB each (112 MB) to v1.
        let field = |i: usize| text_part(&format!("f{i}"), b'a', 5_600_000);
        let mut parts = (0..20)
            .map(field)
            .flat_map(|p| p.chunks(256 * 1024).map(http_chunk).collect::<Vec<_>>());
        let (answer, sent) = send_until_answered(
            &t,
            chunked_head("/api/v1/verify", &ten.api_key),
            move |_| parts.next(),
        )
        .await;
        refused_early(&answer, sent, "invalid_request");
        // Base64 in `data` may be long, but only once; and the whole stream is capped.
        let twice = [
            text_part("data", b'A', 4_000_000),
            text_part("data", b'A', 4_000_000),
        ]
        .concat();
        let mut chunks = twice
            .chunks(256 * 1024)
            .map(http_chunk)
            .collect::<Vec<_>>()
            .into_iter();
        let (answer, _) = send_until_answered(
            &t,
            chunked_head("/api/v1/verify", &ten.api_key),
            move |_| chunks.next(),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(answer.contains("more than once"), "{answer}");
    }
);

both!(
    a_multipart_stream_longer_than_the_body_cap_is_refused,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        // An image just under its cap, then a Base64 field (each under its own cap) adding up
        // past the body cap.
        let mut first = text_part("image", b'i', 4_000_000);
        first
            .extend_from_slice(b"--XyZ\r\nContent-Disposition: form-data; name=\"base64\"\r\n\r\n");
        let request = chunked_head("/v2/verify/bank", &ten.api_key);
        let (answer, sent) = send_until_answered(&t, request, endless(first, b'A')).await;
        refused_early(&answer, sent, "body: must be at most 6291456 bytes");
    }
);

// Decode admission is fair by service: a service that queued many decodes first does not
// make another service's image wait behind all of them (with FIFO admission this request
// would wait for six decodes that never end, and get 429).
both!(
    a_flooding_service_does_not_queue_ahead_of_another,
    |b: Backend| async move {
        let t =
            TestApp::spawn_with_config(b, "[limits]\ndecode_slots = 1\ndecode_wait_secs = 20\n")
                .await;
        let ten = t.tenant(100).await;
        let tr = t.transfer("004", "014", 15050).await;
        let png = server::slip_image::png_bytes(&tr.payload, "004").unwrap();
        let budget = || t.app.services.decode_budget();
        let flood: domain::ServiceId = "flooding-service".into();
        // The flooding service holds the only slot and queues six more decodes.
        let held = budget().admit(&flood, 1024).await.unwrap();
        let services = t.app.services.clone();
        let mut queued = Vec::new();
        for _ in 0..6 {
            let (services, flood) = (services.clone(), flood.clone());
            queued.push(tokio::spawn(async move {
                let a = services.decode_budget().admit(&flood, 1024).await;
                // Held for ever, as by decodes that never end.
                std::future::pending::<()>().await;
                drop(a);
            }));
        }
        while budget().waiting() < 6 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let other = {
            let (http, url, key) = (
                t.http.clone(),
                format!("{}/v2/verify/bank", t.base),
                ten.api_key.clone(),
            );
            let body = json!({ "base64": b64(&png) });
            tokio::spawn(async move { http.post(url).bearer_auth(key).json(&body).send().await })
        };
        while budget().waiting() < 7 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(held);
        let r = other.await.unwrap().unwrap();
        assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
        // The flood's queue is still there: the other service went first.
        assert!(budget().waiting() >= 5, "{}", budget().waiting());
        for q in queued {
            q.abort();
        }
        t.stop().await;
    }
);
