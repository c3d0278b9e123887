//! A kbank connector through the whole service: configuration file → router → the simulator's
//! KBank routes over HTTPS with a required client certificate → `/v2/verify/bank` rawSlip.

use serde_json::{json, Value};
use sim::{Fixtures, Route, Sim, SimConfig};
use store::Store;
use testkit::{Backend, TestApp};

const REF: &str = "010092101507665143";

fn fixtures() -> Fixtures {
    // banks.md 1.4, both empty-proxy forms; the amount as a string (SCB-style), fee a number.
    let data = json!({"language": "TH", "transRef": REF, "sendingBank": "004",
        "receivingBank": "014", "transDate": "20261122", "transTime": "09:05:00",
        "sender": {"displayName": "นาย ธนาคาร ก", "name": "Mr. Thanakarn K",
                   "proxy": {"type": null, "value": null},
                   "account": {"type": "BANKAC", "value": "xxx-x-x0209-x"}},
        "receiver": {"displayName": "บริษัท ร้านดี จำกัด", "name": "RANDEE CO LTD",
                     "proxy": {"type": "", "value": ""},
                     "account": {"type": "BANKAC", "value": "xxx-x-x3109-x"}},
        "amount": "1500.50", "paidLocalAmount": 1500.5, "paidLocalCurrency": "764",
        "countryCode": "TH", "transFeeAmount": 0, "ref1": "ORDER-9", "ref2": "", "ref3": "",
        "toMerchantId": ""});
    Fixtures::from_json(&json!({"kbank": [data]}).to_string()).unwrap()
}

#[tokio::test]
async fn a_kbank_connector_verifies_through_the_service() {
    let (sim, pki) = Sim::start_https(SimConfig {
        fixtures: fixtures(),
        client_id: Some("kb-id".into()),
        client_secret: Some("kb-s3cret".into()),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = std::env::temp_dir().join(format!("sv-kbank-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let ca = write("ca.pem", &pki.ca_pem);
    let cert = write("client.pem", &pki.client_cert_pem);
    let key = write("client-key.pem", &pki.client_key_pem);
    let toml = format!(
        "[connectors.kb]\nkind = \"kbank\"\nbase_url = \"{}\"\nclient_id = \"kb-id\"\n\
         client_secret = \"kb-s3cret\"\nclient_cert = \"{cert}\"\nclient_key_file = \"{key}\"\n\
         ca_file = \"{ca}\"\ntimeout_ms = 5000\n\
         [routing]\ndefault = [\"sandbox\"]\n\"004\" = [\"kb\"]\n",
        sim.base_url()
    );
    let t = TestApp::spawn_with_config(Backend::Sqlite, &toml).await;
    let ten = t.tenant(100).await;
    let payload = slip_qr::encode_bank_slip("004", REF);
    let (s, v) = t
        .post("/v2/verify/bank", &ten.api_key, json!({"payload": payload}))
        .await;
    assert_eq!(s, 200, "{v}");
    let golden: Value = json!({
        "payload": payload,
        "transRef": REF,
        "date": "2026-11-22T09:05:00.000+07:00",
        "countryCode": "TH",
        "amount": {"amount": 1500.5, "local": {"amount": 1500.5, "currency": "THB"}},
        "fee": 0.0,
        "ref1": "ORDER-9", "ref2": "", "ref3": "",
        "sender": {
            "bank": {"id": "004", "name": "ธนาคารกสิกรไทย", "short": "KBANK"},
            "account": {"name": {"th": "นาย ธนาคาร ก", "en": "Mr. Thanakarn K"},
                        "bank": {"type": "BANKAC", "account": "xxx-x-x0209-x"}}
        },
        "receiver": {
            "bank": {"id": "014", "name": "ธนาคารไทยพาณิชย์", "short": "SCB"},
            "account": {"name": {"th": "บริษัท ร้านดี จำกัด", "en": "RANDEE CO LTD"},
                        "bank": {"type": "BANKAC", "account": "xxx-x-x3109-x"}},
            "merchantId": null
        }
    });
    assert_eq!(v["data"]["rawSlip"], golden);
    assert_eq!(v["data"]["amountInSlip"], 1500.5);
    assert_eq!(sim.calls(Route::KBank), 1);
    assert_eq!(sim.tokens_issued(), 1);
    let (accepted, refused) = sim.tls_handshakes();
    assert!(accepted >= 1);
    assert_eq!(refused, 0);
    let rec = t
        .app
        .store
        .get_verification(&ten.service_id, "004", REF)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec.source.as_deref(), Some("kb"));
    t.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
