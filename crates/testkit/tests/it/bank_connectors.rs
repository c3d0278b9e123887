//! Bank connectors through the whole service: configuration file → router → the simulator's
//! bank routes → `/v2/verify/bank` rawSlip. KBank over HTTPS with a required client
//! certificate; SCB with string amounts and a configured not-found code.

use serde_json::{json, Value};
use sim::{Fixtures, Route, Sim, SimConfig};
use store::Space;
use testkit::{Backend, Tenant, TestApp};

const KBANK: (&str, &str, &str) = ("004", "ธนาคารกสิกรไทย", "KBANK");
const SCB: (&str, &str, &str) = ("014", "ธนาคารไทยพาณิชย์", "SCB");

/// One side of a v2 rawSlip: its bank and a bank account.
fn party(bank: (&str, &str, &str), name: Value, account: &str) -> Value {
    let (id, bank_name, short) = bank;
    json!({
        "bank": {"id": id, "name": bank_name, "short": short},
        "account": {"name": name, "bank": {"type": "BANKAC", "account": account}}
    })
}

/// The rawSlip `/v2/verify/bank` answers for both fixtures below: 1,500.50 THB on
/// 2026-11-22 09:05 Bangkok time, ref1 `ORDER-9`.
fn raw_slip(payload: &str, trans_ref: &str, sender: Value, mut receiver: Value) -> Value {
    receiver["merchantId"] = Value::Null;
    json!({
        "payload": payload,
        "transRef": trans_ref,
        "date": "2026-11-22T09:05:00.000+07:00",
        "countryCode": "TH",
        "amount": {"amount": 1500.5, "local": {"amount": 1500.5, "currency": "THB"}},
        "fee": 0.0,
        "ref1": "ORDER-9", "ref2": "", "ref3": "",
        "sender": sender,
        "receiver": receiver,
    })
}

/// The simulator's configuration: its fixtures and the credentials it accepts.
fn sim_config(fixtures: Fixtures, id: &str, secret: &str) -> SimConfig {
    SimConfig {
        fixtures,
        client_id: Some(id.into()),
        client_secret: Some(secret.into()),
        ..SimConfig::default()
    }
}

/// Starts the service with `toml` and verifies the slip `bank`/`trans_ref` through it:
/// asserts a 200 whose rawSlip is `raw_slip` of these parties; returns the app, its tenant
/// and the answer.
async fn verify_through(
    toml: &str,
    (bank, trans_ref): (&str, &str),
    sender: Value,
    receiver: Value,
) -> (TestApp, Tenant, Value) {
    let t = TestApp::spawn_with_config(Backend::Sqlite, toml).await;
    let ten = t.tenant(100).await;
    let payload = slip_qr::encode_bank_slip(bank, trans_ref);
    let v = t
        .verify_bank_ok(&ten.api_key, json!({"payload": payload}))
        .await;
    let golden = raw_slip(&payload, trans_ref, sender, receiver);
    assert_eq!(v["data"]["rawSlip"], golden);
    (t, ten, v)
}

/// The connector the stored verification names as its source.
async fn source(t: &TestApp, ten: &Tenant, bank: &str, trans_ref: &str) -> Option<String> {
    let store = &t.app.store;
    let rec = store.get_verification(Space::Production, &ten.service_id, bank, trans_ref);
    rec.await.unwrap().unwrap().source
}

const KBANK_REF: &str = "010092101507665143";

fn kbank_fixtures() -> Fixtures {
    // banks.md 1.4, both empty-proxy forms; the amount as a string (SCB-style), fee a number.
    let mut data = sim::kbank_example();
    data["receivingBank"] = json!("014");
    (data["transDate"], data["transTime"]) = (json!("20261122"), json!("09:05:00"));
    data["receiver"]["displayName"] = json!("บริษัท ร้านดี จำกัด");
    data["receiver"]["name"] = json!("RANDEE CO LTD");
    (data["amount"], data["paidLocalAmount"]) = (json!("1500.50"), json!(1500.5));
    data["ref1"] = json!("ORDER-9");
    Fixtures::from_json(&json!({"kbank": [data]}).to_string()).unwrap()
}

#[tokio::test]
async fn a_kbank_connector_verifies_through_the_service() {
    let config = sim_config(kbank_fixtures(), "kb-id", "kb-s3cret");
    let (sim, pki) = Sim::start_https(config).await.unwrap();
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
    let sender = json!({"th": "นาย ธนาคาร ก", "en": "Mr. Thanakarn K"});
    let sender = party(KBANK, sender, "xxx-x-x0209-x");
    let receiver = json!({"th": "บริษัท ร้านดี จำกัด", "en": "RANDEE CO LTD"});
    let receiver = party(SCB, receiver, "xxx-x-x3109-x");
    let (t, ten, v) = verify_through(&toml, ("004", KBANK_REF), sender, receiver).await;
    assert_eq!(v["data"]["amountInSlip"], 1500.5);
    assert_eq!(sim.calls(Route::KBank), 1);
    assert_eq!(sim.tokens_issued(), 1);
    let (accepted, refused) = sim.tls_handshakes();
    assert!(accepted >= 1);
    assert_eq!(refused, 0);
    let source = source(&t, &ten, "004", KBANK_REF).await;
    assert_eq!(source.as_deref(), Some("kb"));
    t.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

const SCB_REF: &str = "202611221AbCdEfGhIjKlMnO";

fn scb_fixtures() -> Fixtures {
    let slip = json!({"transRef": SCB_REF, "date": "2026-11-22T09:05:00.000+07:00",
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
    let sim = Sim::start(sim_config(scb_fixtures(), "scb-key", "scb-s3cret"))
        .await
        .unwrap();
    let toml = format!(
        "[connectors.scb]\nkind = \"scb\"\nbase_url = \"{}\"\napi_key = \"scb-key\"\n\
         api_secret = \"scb-s3cret\"\nnot_found_codes = [\"1104\"]\ntimeout_ms = 5000\n\
         [routing]\ndefault = [\"sandbox\"]\n\"014\" = [\"scb\"]\n",
        sim.base_url()
    );
    let sender = json!({"th": "นาย ทดสอบ ก", "en": "MR. TODSOB K"});
    let sender = party(SCB, sender, "xxx-x-x0209-x");
    // No English name on this side.
    let receiver = party(KBANK, json!({"th": "บริษัท ร้านดี จำกัด"}), "xxx-x-x3109-x");
    let (t, ten, _) = verify_through(&toml, ("014", SCB_REF), sender, receiver).await;
    assert_eq!(
        (sim.calls(Route::ScbToken), sim.calls(Route::ScbVerify)),
        (1, 1)
    );

    // An unknown reference: SCB's 1104 is configured as not found.
    let other = slip_qr::encode_bank_slip("014", "20261122NOSUCHREF0000000");
    let (s, v) = t.verify_bank(&ten.api_key, json!({"payload": other})).await;
    assert_eq!(v["error"]["code"], "SLIP_NOT_FOUND", "{s} {v}");
    assert_eq!(sim.calls(Route::ScbToken), 1);

    let source = source(&t, &ten, "014", SCB_REF).await;
    assert_eq!(source.as_deref(), Some("scb"));
    t.stop().await;
}
