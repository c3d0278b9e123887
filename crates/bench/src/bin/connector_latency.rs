//! `connector-latency`: slipverify's added latency over an upstream's own, measured in one run.
//! For each slip (each verified once: repeats would be answered locally), one request goes
//! straight to the upstream simulator in its own wire format, and one through slipverify
//! (`POST /v2/verify/bank`), alternating, each on its own kept-alive connection. Prints the
//! p50 / p99 of both and of the per-slip difference. Used by `scripts/bench-connector`.

use clap::Parser;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// slipverify's base URL.
    #[arg(long)]
    slipverify: String,
    /// A branch key of slipverify.
    #[arg(long)]
    key: String,
    /// The simulator's base URL (the connector's `base_url`).
    #[arg(long)]
    sim: String,
    /// The upstream's wire format: `easyslip` or `kbank`.
    #[arg(long, default_value = "easyslip")]
    kind: String,
    /// Credentials the direct requests use (easyslip: api key; kbank: client id and secret).
    #[arg(long, default_value = "")]
    api_key: String,
    #[arg(long, default_value = "")]
    client_id: String,
    #[arg(long, default_value = "")]
    client_secret: String,
    /// `sendingBank,transRef,payload` lines: the slips, each used once.
    #[arg(long)]
    slips: std::path::PathBuf,
    /// Instead of measuring: write N distinct slips to `--slips` and the simulator's fixture
    /// file (KBank-style `data` and rawSlip shapes) to this path, then exit.
    #[arg(long)]
    make_fixtures: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 1000)]
    n: usize,
    /// Slips used to warm both paths up (not counted).
    #[arg(long, default_value_t = 50)]
    warmup: usize,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    if let Some(fx) = &a.make_fixtures {
        return make_fixtures(fx, &a.slips, a.n);
    }
    let text = std::fs::read_to_string(&a.slips)?;
    let slips: Vec<(String, String, String)> = text
        .lines()
        .filter_map(|l| {
            let mut p = l.splitn(3, ',');
            Some((p.next()?.into(), p.next()?.into(), p.next()?.into()))
        })
        .collect();
    // One client per side: each keeps its own connection alive.
    let direct = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()?;
    let via = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()?;
    let token = match a.kind.as_str() {
        "kbank" => {
            let v: Value = direct
                .post(format!("{}/v2/oauth/token", a.sim))
                .basic_auth(&a.client_id, Some(&a.client_secret))
                .header("content-type", "application/x-www-form-urlencoded")
                .body("grant_type=client_credentials")
                .send()
                .await?
                .json()
                .await?;
            v["access_token"].as_str().unwrap_or_default().to_string()
        }
        _ => a.api_key.clone(),
    };
    let (mut d_ms, mut v_ms, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    let mut failures = 0usize;
    for (i, (bank, trans_ref, payload)) in slips.iter().enumerate() {
        let req = match a.kind.as_str() {
            "kbank" => direct
                .post(format!("{}/v1/verslip/kbank/verify", a.sim))
                .bearer_auth(&token)
                .json(
                    &json!({"rqUID": format!("bench-{i}"), "rqDt": "2026-11-23T10:00:00.000+07:00",
                    "data": {"sendingBank": bank, "transRef": trans_ref}}),
                ),
            _ => direct
                .post(format!("{}/v2/verify/bank", a.sim))
                .bearer_auth(&token)
                .json(&json!({"payload": payload})),
        };
        let t = Instant::now();
        let ok_direct = match req.send().await {
            Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
            Err(_) => false,
        };
        let d = t.elapsed();
        let t = Instant::now();
        let ok_via = match via
            .post(format!("{}/v2/verify/bank", a.slipverify))
            .bearer_auth(&a.key)
            .json(&json!({"payload": payload, "checkDuplicate": true}))
            .send()
            .await
        {
            Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
            Err(_) => false,
        };
        let v = t.elapsed();
        if !(ok_direct && ok_via) {
            failures += 1;
            continue;
        }
        if i < a.warmup {
            continue;
        }
        let ms = |x: Duration| x.as_secs_f64() * 1000.0;
        d_ms.push(ms(d));
        v_ms.push(ms(v));
        diff.push(ms(v) - ms(d));
    }
    for s in [&mut d_ms, &mut v_ms, &mut diff] {
        s.sort_by(|x, y| x.total_cmp(y));
    }
    println!(
        "{{\"kind\":\"{}\",\"slips\":{},\"failures\":{failures},\
         \"upstream_p50_ms\":{:.3},\"upstream_p99_ms\":{:.3},\
         \"slipverify_p50_ms\":{:.3},\"slipverify_p99_ms\":{:.3},\
         \"added_p50_ms\":{:.3},\"added_p99_ms\":{:.3}}}",
        a.kind,
        d_ms.len(),
        percentile(&d_ms, 0.5),
        percentile(&d_ms, 0.99),
        percentile(&v_ms, 0.5),
        percentile(&v_ms, 0.99),
        percentile(&diff, 0.5),
        percentile(&diff, 0.99),
    );
    if failures > 0 {
        anyhow::bail!("{failures} slips failed on one of the paths");
    }
    Ok(())
}

/// N slips from KBank to SCB, each its own reference, as the simulator's fixture file.
fn make_fixtures(
    fixtures: &std::path::Path,
    slips: &std::path::Path,
    n: usize,
) -> anyhow::Result<()> {
    let (mut bank, mut kbank) = (Vec::new(), Vec::new());
    let mut lines = String::new();
    for i in 0..n {
        let trans_ref = format!("2026112310BENCH{i:07}");
        let payload = slip_qr::encode_bank_slip("004", &trans_ref);
        lines.push_str(&format!("004,{trans_ref},{payload}\n"));
        bank.push(json!({
            "transRef": trans_ref, "payload": payload,
            "date": "2026-11-23T10:15:07.000+07:00", "countryCode": "TH",
            "amount": {"amount": 100 + i % 900, "local": {"amount": 100 + i % 900, "currency": "THB"}},
            "fee": 0, "ref1": "", "ref2": "", "ref3": "",
            "sender": {"bank": {"id": "004", "name": "Kasikorn Bank", "short": "KBANK"},
                "account": {"name": {"th": "นาย ทดสอบ", "en": "MR. TEST"},
                    "bank": {"type": "BANKAC", "account": "xxx-x-x0209-x"}}},
            "receiver": {"bank": {"id": "014", "name": "SCB", "short": "SCB"},
                "account": {"name": {"th": "ร้าน ทดลอง"},
                    "bank": {"type": "BANKAC", "account": "xxx-x-x3109-x"}},
                "merchantId": null}
        }));
        // banks.md 1.4's example, carried from KBank to SCB with this slip's reference.
        let mut data = sim::kbank_example();
        (data["transRef"], data["receivingBank"]) = (json!(trans_ref), json!("014"));
        data["transDate"] = json!("20261123");
        data["sender"]["displayName"] = json!("นาย ทดสอบ");
        data["sender"]["name"] = json!("MR. TEST");
        data["receiver"]["displayName"] = json!("ร้าน ทดลอง");
        data["receiver"]["name"] = json!("TEST SHOP");
        (data["amount"], data["paidLocalAmount"]) = (json!(100 + i % 900), json!(100 + i % 900));
        kbank.push(data);
    }
    std::fs::write(slips, lines)?;
    std::fs::write(fixtures, json!({"bank": bank, "kbank": kbank}).to_string())?;
    Ok(())
}
