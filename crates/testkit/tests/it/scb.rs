//! An scb connector through the whole service: configuration file → router → the simulator's
//! SCB routes (string amounts) → `/v2/verify/bank` rawSlip.

use serde_json::{json, Value};
use sim::{Fixtures, Route, Sim, SimConfig};
use store::Store;
use testkit::{Backend, TestApp};

const REF: &str = "202611221AbCdEfGhIjKlMnO";

fn fixtures() -> Fixtures {
    let slip = json!({"transRef": REF, "date": "2026-11-22T09:05:00.000+07:00",
        "countryCode": "TH", "amount": {"amount": 1500.5}, "ref1": "ORDER-9",
        "sender": {"bank": {"id": "014"},
                   "account": {"name": {"th": "นาย ทดสอบ ก", "en": "MR. TODSOB K"},
                               "bank": {"type": "BANKAC", "account": "xxx-x-x0209-x"}}},
        "receiver": {"bank": {"id": "004"},
                     "account": {"name": {"th": "บริษัท ร้านดี จำกัด"},
                                 "bank": {"type": "BANKAC", "account": "xxx-x-x3109-x"}}}});
    Fixtures::from_json(&json!({"bank": [slip]}).to_string()).unwrap()
}

#[tokio::test]
async fn an_scb_connector_verifies_through_the_service() {
    let sim = Sim::start(SimConfig {
        fixtures: fixtures(),
        client_id: Some("scb-key".into()),
        client_secret: Some("scb-s3cret".into()),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let toml = format!(
        "[connectors.scb]\nkind = \"scb\"\nbase_url = \"{}\"\napi_key = \"scb-key\"\n\
         api_secret = \"scb-s3cret\"\nnot_found_codes = [\"1104\"]\ntimeout_ms = 5000\n\
         [routing]\ndefault = [\"sandbox\"]\n\"014\" = [\"scb\"]\n",
        sim.base_url()
    );
    let t = TestApp::spawn_with_config(Backend::Sqlite, &toml).await;
    let ten = t.tenant(100).await;
    let payload = slip_qr::encode_bank_slip("014", REF);
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
            "bank": {"id": "014", "name": "ธนาคารไทยพาณิชย์", "short": "SCB"},
            "account": {"name": {"th": "นาย ทดสอบ ก", "en": "MR. TODSOB K"},
                        "bank": {"type": "BANKAC", "account": "xxx-x-x0209-x"}}
        },
        "receiver": {
            "bank": {"id": "004", "name": "ธนาคารกสิกรไทย", "short": "KBANK"},
            "account": {"name": {"th": "บริษัท ร้านดี จำกัด"},
                        "bank": {"type": "BANKAC", "account": "xxx-x-x3109-x"}},
            "merchantId": null
        }
    });
    assert_eq!(v["data"]["rawSlip"], golden);
    assert_eq!(
        (sim.calls(Route::ScbToken), sim.calls(Route::ScbVerify)),
        (1, 1)
    );

    // An unknown reference: SCB's 1104 is configured as not found.
    let other = slip_qr::encode_bank_slip("014", "20261122NOSUCHREF0000000");
    let (s, v) = t
        .post("/v2/verify/bank", &ten.api_key, json!({"payload": other}))
        .await;
    assert_eq!(v["error"]["code"], "SLIP_NOT_FOUND", "{s} {v}");
    assert_eq!(sim.calls(Route::ScbToken), 1);

    let rec = t
        .app
        .store
        .get_verification(&ten.service_id, "014", REF)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec.source.as_deref(), Some("scb"));
    t.stop().await;
}
