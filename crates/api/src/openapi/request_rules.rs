//! What the document says about requests beyond what the wire types' attributes state, written
//! into the finished JSON (utoipa's attributes cannot say "exactly one of", give array items a
//! pattern, or write some keys in the order the published document has them). Limits and types
//! are on the fields (`wire/`), where `Request::read` reads them too; here are
//! [`field_formats`] (a single field's format the attributes cannot state) and
//! [`request_rules`] (rules across fields: exactly one input, at least one trigger, variants by
//! a field's value, forms as one object per input). `scripts/api-fuzz` checks that a request
//! valid by the document is not refused as malformed.

use serde_json::{json, Value};

/// The component schemas a request body uses, directly or through other components.
fn request_schemas(doc: &Value) -> std::collections::BTreeSet<String> {
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                for (k, v) in o {
                    match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => {
                            out.extend(r.rsplit('/').next().map(String::from))
                        }
                        _ => refs(v, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut todo = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for op in paths
            .values()
            .filter_map(Value::as_object)
            .flat_map(|i| i.values())
        {
            refs(&op["requestBody"], &mut todo);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone()) {
            refs(&doc["components"]["schemas"][&name], &mut todo);
        }
    }
    seen
}

/// `["string", "null"]` → `"string"`; `oneOf: [{type: null}, X]` → `X`.
fn strip_null(p: &mut Value) {
    if let Some(Value::Array(ts)) = p.get("type") {
        let kept: Vec<Value> = ts.iter().filter(|t| *t != "null").cloned().collect();
        p["type"] = match kept.as_slice() {
            [one] => one.clone(),
            _ => Value::Array(kept),
        };
    }
    if let Some(Value::Array(variants)) = p.get("oneOf") {
        let kept: Vec<Value> = variants
            .iter()
            .filter(|v| v.get("type").is_none_or(|t| t != "null"))
            .cloned()
            .collect();
        if let [one] = kept.as_slice() {
            let one = one.clone();
            if let Some(o) = p.as_object_mut() {
                o.remove("oneOf");
            }
            if let (Some(o), Value::Object(inner)) = (p.as_object_mut(), one) {
                o.extend(inner);
            }
        }
    }
}

/// `POST /api/v1/qr/generate`: PROMPTPAY takes exactly one of `msisdn`, `natId`, `eWalletId`;
/// the merchant types take `ref1` (and a `billerId` unless the branch has one).
fn qr_variants(schema: &mut Value) {
    let not_null =
        |f: &str| json!({ "required": [f], "properties": { f: { "not": { "type": "null" } } } });
    schema["oneOf"] = json!([
        {
            "properties": { "type": { "const": "PROMPTPAY" } },
            "oneOf": [not_null("msisdn"), not_null("natId"), not_null("eWalletId")],
        },
        {
            "properties": { "type": { "enum": ["KSHOP", "MAE_MANEE", "TUNGNGERN"] } },
            "allOf": [not_null("ref1")],
        },
    ]);
}

/// Request schemas with several inputs of which exactly one must be sent (`null` is absent).
const EXACTLY_ONE: &[(&str, &[&str])] = &[
    ("VerifyBody", &["payload", "base64", "url"]),
    ("VerifyForm", &["image", "payload", "base64", "url"]),
    ("V1VerifyRequest", &["payload", "url", "data", "image"]),
    ("V1VerifyForm", &["file", "payload", "url", "data"]),
];

/// Patterns of particular fields (schema, property, pattern) that cannot sit on the field:
/// `bankNumber`'s `maxLength` is added here too, after it (the published key order).
const PATTERNS: &[(&str, &str, &str)] =
    &[("NewBankAccount", "bankNumber", "^[ -]*([0-9][ -]*){10,15}$")];

/// A branch id as the partner API reads it (a UUID, hyphenated as the API writes it).
const UUID: &str = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

/// Formats of path and query parameters that the attributes would state in many places or
/// that come from the domain: the partner API's `branchId` (a UUID), and the attempts search's
/// `outcome` (the domain's list), `from`/`to` (a day or an RFC 3339 time) and `cursor`.
pub(super) fn parameter_formats(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let search = path.starts_with("/admin/verifications");
        let partner = path.starts_with("/v2/b2b/");
        let ops = item
            .as_object_mut()
            .into_iter()
            .flat_map(|i| i.values_mut());
        let params = ops.filter_map(|op| op.get_mut("parameters").and_then(Value::as_array_mut));
        for p in params.flatten() {
            let (name, place) = (p["name"].clone(), p["in"].clone());
            let schema = &mut p["schema"];
            match (name.as_str().unwrap_or(""), place.as_str().unwrap_or("")) {
                ("branchId", "path") if partner => schema["pattern"] = json!(UUID),
                ("outcome", "query") if search => {
                    let all = domain::attempt::Outcome::ALL.map(|o| o.as_str());
                    schema["enum"] = json!(all);
                }
                ("from" | "to", "query") if search => {
                    schema["anyOf"] = json!([{ "format": "date" }, { "format": "date-time" }]);
                }
                ("cursor", "query") if search => {
                    schema["pattern"] = json!("^[0-9]{1,18}\\.[0-9]{1,18}$");
                }
                _ => {}
            }
        }
    }
}

/// Amounts in baht: at most 2 decimals.
const AMOUNTS: &[(&str, &str)] = &[
    ("VerifyBody", "matchAmount"),
    ("V1QrRequest", "amount"),
    ("PackageChange", "price"),
    ("CreditMove", "amount"),
];

/// Base64 as `decode_base64` reads it (an optional `data:` prefix, padded standard alphabet).
const BASE64: &str =
    "^(data:image/[a-z]+;base64,)?([A-Za-z0-9+/]{4})+([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

/// Each request schema of the document, by name.
fn each_request(doc: &mut Value, mut rule: impl FnMut(&str, &mut Value)) {
    let requests = request_schemas(doc);
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    // Answers are described as they are; these rules are about what a client may send.
    for (name, schema) in schemas.iter_mut().filter(|(n, _)| requests.contains(*n)) {
        // Only objects with fields (`allOf` combinations take their parts' rules).
        if schema.get("properties").is_some_and(Value::is_object) {
            rule(name, schema);
        }
    }
}

/// Forms whose fields are their documented ones.
fn is_form(name: &str) -> bool {
    matches!(name, "VerifyForm" | "V1VerifyForm")
}

/// One field's format, where the attributes cannot state it (or not in the document's order).
pub(super) fn field_formats(doc: &mut Value) {
    each_request(doc, |name, schema| {
        let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            return;
        };
        for (prop, p) in props.iter_mut() {
            let is_string = match p.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            // Strings are trimmed before their length is checked: at least one non-space.
            if is_string
                && p.get("minLength").and_then(Value::as_u64).unwrap_or(0) >= 1
                && p.get("pattern").is_none()
            {
                p["pattern"] = json!("\\S");
            }
            if let Some((_, _, pattern)) = PATTERNS.iter().find(|(s, f, _)| *s == name && f == prop)
            {
                p["pattern"] = json!(pattern);
            }
            if AMOUNTS.iter().any(|(s, f)| *s == name && f == prop) {
                p["multipleOf"] = json!(0.01);
            }
            if matches!(prop.as_str(), "base64" | "data" | "image")
                && is_string
                && p.get("format").is_none()
            {
                p["pattern"] = json!(BASE64);
            }
            if prop == "allowIps" {
                p["minItems"] = json!(1);
                let ips = "`*`, IPv4 or IPv6 addresses, IPv4 CIDR blocks; IPv6 CIDR blocks \
                           (`2001:db8::/32`) are accepted too.";
                p["description"] = match p["description"].as_str() {
                    Some(d) => json!(format!("{d} {ips}")),
                    None => json!(ips),
                };
                p["items"] = json!({"anyOf": [
                    {"type": "string", "const": "*"},
                    {"type": "string", "format": "ipv4"},
                    {"type": "string", "format": "ipv6"},
                    {"type": "string", "pattern": "^((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])/(3[0-2]|[12]?[0-9])$"},
                ]});
            }
        }
        let props = &mut schema["properties"];
        match name {
            "RotateKey" => props["graceSeconds"]["maximum"] = json!(7 * 24 * 3600),
            "PackageChange" => props["price"]["maximum"] = json!(100_000_000),
            "NewBankAccount" => props["bankNumber"]["maxLength"] = json!(32),
            "AdjustQuota" => {
                let amount = &mut props["amount"];
                amount["not"] = json!({ "const": 0 });
                amount["minimum"] = json!(-1_000_000_000);
                amount["maximum"] = json!(1_000_000_000);
            }
            "CreditMove" => {
                props["amount"]["maximum"] = json!(100_000_000);
                props["amount"]["minimum"] = json!(-100_000_000);
            }
            _ => {}
        }
    });
}

/// Rules across fields: exactly one input, at least one trigger, variants by a field's value,
/// and forms as one whole object per input.
pub(super) fn request_rules(doc: &mut Value) {
    each_request(doc, |name, schema| {
        if name == "V1QrRequest" {
            qr_variants(schema);
        }
        // A form's fields are its documented ones: a part that is not one of them (or not
        // valid form data at all) is outside the interface, though well-formed extras are
        // ignored.
        let form = is_form(name);
        if form {
            schema["additionalProperties"] = json!(false);
            // A form field is text or absent; it cannot be null.
            if let Some(props) = schema["properties"].as_object_mut() {
                for p in props.values_mut() {
                    strip_null(p);
                    // OpenAPI 3.1 spelling of a file part (`format: binary` is 3.0's).
                    if p.get("format").is_some_and(|f| f == "binary") {
                        if let Some(o) = p.as_object_mut() {
                            o.remove("format");
                        }
                        p["contentMediaType"] = json!("application/octet-stream");
                    }
                }
                if let Some(amount) = props.get_mut("matchAmount") {
                    amount["pattern"] = json!("^[0-9]{1,12}(\\.[0-9]{1,2})?$");
                }
            }
        }
        match name {
            // At least one trigger.
            "AutoRenewChange" => {
                schema["anyOf"] = json!(["enabled", "onExpiry", "onQuota"]
                    .iter()
                    .map(
                        |f| json!({ "required": [f], "properties": { *f: { "type": "boolean" } } })
                    )
                    .collect::<Vec<_>>())
            }
            // A top-up adds (amount > 0); an adjustment moves either way (amount ≠ 0).
            "CreditMove" => {
                schema["oneOf"] = json!([
                    { "properties": {
                        "kind": { "enum": [null, "topup"] },
                        "amount": { "exclusiveMinimum": 0 } } },
                    { "required": ["kind"], "properties": {
                        "kind": { "const": "adjustment" },
                        "amount": { "not": { "const": 0 } } } },
                ])
            }
            _ => {}
        }
        let Some((_, inputs)) = EXACTLY_ONE.iter().find(|(s, _)| *s == name) else {
            return;
        };
        if form {
            // A form as one complete object per input (the generator of multipart bodies
            // honours variants of whole objects, not constraints beside `properties`).
            let props = schema["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let variants: Vec<Value> = inputs
                .iter()
                .map(|input| {
                    let own: serde_json::Map<String, Value> = props
                        .iter()
                        .filter(|(k, _)| k == input || !inputs.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    json!({
                        "type": "object",
                        "properties": own,
                        "required": [input],
                        "additionalProperties": false,
                    })
                })
                .collect();
            let description = schema.get("description").cloned();
            *schema = json!({ "oneOf": variants });
            if let Some(d) = description {
                schema["description"] = d;
            }
        } else {
            let variants: Vec<Value> = inputs
                .iter()
                .map(|f| {
                    json!({
                        "required": [f],
                        "properties": { *f: { "not": { "type": "null" } } },
                    })
                })
                .collect();
            schema["oneOf"] = Value::Array(variants);
        }
    });
}

#[cfg(test)]
mod tests {
    use crate::openapi::document;
    use serde_json::Value;

    fn schema(name: &str) -> &'static Value {
        &document()["components"]["schemas"][name]
    }

    #[test]
    fn request_rules_reach_the_document() {
        // Exactly one input: one variant per input, each requiring it.
        let body = schema("VerifyBody");
        let required: Vec<&str> = body["oneOf"]
            .as_array()
            .expect("VerifyBody oneOf")
            .iter()
            .map(|v| v["required"][0].as_str().unwrap())
            .collect();
        assert_eq!(required, ["payload", "base64", "url"]);
        // Forms: one whole object per input, no other fields, no nulls, files as 3.1 spells them.
        let form = schema("VerifyForm")["oneOf"]
            .as_array()
            .expect("VerifyForm oneOf");
        assert_eq!(form.len(), 4);
        for v in form {
            assert_eq!(v["additionalProperties"], false);
            assert!(
                v["properties"]["checkDuplicate"].get("oneOf").is_none(),
                "{v}"
            );
        }
        assert_eq!(
            form[0]["properties"]["image"]["contentMediaType"],
            "application/octet-stream"
        );
        assert!(form[0]["properties"].get("payload").is_none());
        // Trimmed strings need a non-space; amounts two decimals; patterns where the checks have them.
        assert_eq!(schema("NewService")["properties"]["name"]["pattern"], "\\S");
        assert_eq!(
            schema("VerifyBody")["properties"]["matchAmount"]["multipleOf"],
            0.01
        );
        assert_eq!(
            schema("BranchChange")["properties"]["billerId"]["pattern"],
            "^[0-9]{15}$"
        );
        assert_eq!(
            schema("V1QrRequest")["oneOf"].as_array().map(Vec::len),
            Some(2)
        );
        assert!(schema("AutoRenewChange")["anyOf"].is_array());
        // Parameters: the partner API's branch ids, the search's outcomes from the domain.
        let param = |path: &str, method: &str, name: &str| -> &'static Value {
            let ps = document()["paths"][path][method]["parameters"].as_array();
            ps.and_then(|ps| ps.iter().find(|p| p["name"] == name))
                .map(|p| &p["schema"])
                .unwrap_or(&Value::Null)
        };
        let branch = param("/v2/b2b/branches/{branchId}/quota", "put", "branchId");
        assert!(branch["pattern"]
            .as_str()
            .is_some_and(|p| p.contains("{12}")));
        assert!(param("/line/{branchId}/webhook", "post", "branchId")
            .get("pattern")
            .is_none());
        let outcomes = param("/admin/verifications", "get", "outcome")["enum"].clone();
        let all = domain::attempt::Outcome::ALL.map(|o| o.as_str());
        assert_eq!(outcomes, serde_json::json!(all));
        // Answers are left as they are.
        assert!(schema("BranchView")["properties"]["allowIps"]["items"]
            .get("anyOf")
            .is_none());
        assert!(schema("V1Qr")["properties"]["image"]
            .get("pattern")
            .is_none());
    }
}
