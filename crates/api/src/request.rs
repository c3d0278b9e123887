//! A request body is one type (in `wire/`): its `ToSchema` derive documents it, with the limits
//! on its fields (`#[schema(min_length, max_length, minimum)]`), and its [`Request::read`]
//! parses a body against those same limits, read back from the served document, collecting
//! every failure into one `VALIDATION_ERROR` (spec 7.1). Handlers take it with [`Valid`]
//! (JSON) or [`crate::form`] (multipart); the Base64 image decoder and the `callbackUrl` rule
//! live here once.

use crate::error::ApiError;
use axum::extract::FromRequest;
use domain::{Error, Satang, Validation};
use serde_json::{Map, Value};
use services::input::MAX_IMAGE_BYTES;

/// A request body type: documented by its schema, parsed and checked by `read`.
pub(crate) trait Request: utoipa::ToSchema {
    /// What the handler receives.
    type Parsed;
    /// Only the first failure is answered (v1 stops at the first, compat.md); `read` still
    /// reads in the order failures are reported.
    const FIRST_FAILURE_ONLY: bool = false;
    /// Reads every field, in the order the failures are reported, never stopping at the first;
    /// cross-field rules (exactly one of, at least one of) sit here too.
    fn read(f: &mut Fields<'_>) -> Self::Parsed;
}

/// The JSON body of a request, parsed and checked as `T` says (`Valid(req): Valid<w::NewUser>`).
pub(crate) struct Valid<T: Request>(pub T::Parsed);

impl<T: Request, S: Send + Sync> FromRequest<S> for Valid<T> {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, _: &S) -> Result<Self, ApiError> {
        let map = crate::body::json_object(req.into_body()).await?;
        Ok(Valid(parse::<T>(&map)?))
    }
}

/// `map` read as `T`: its value, or every failure as one `VALIDATION_ERROR`.
pub(crate) fn parse<T: Request>(map: &Map<String, Value>) -> Result<T::Parsed, Error> {
    let mut f = Fields::of::<T>(map);
    f.first_only = T::FIRST_FAILURE_ONLY;
    let parsed = T::read(&mut f);
    f.finish()?;
    Ok(parsed)
}

/// The schema of the request type `name` in the served document, where its limits are read.
fn schema_of(name: &str) -> &'static Value {
    &crate::openapi::document()["components"]["schemas"][name]
}

/// A property of a request schema: its own, or one of the schemas it combines (`allOf` of a
/// flattened type, the `oneOf` variants of a form).
fn property<'a>(schema: &'a Value, name: &str) -> Option<&'a Value> {
    if let Some(p) = schema["properties"].get(name) {
        return Some(p);
    }
    ["allOf", "oneOf"]
        .iter()
        .filter_map(|k| schema[k].as_array())
        .flatten()
        .find_map(|part| match part["$ref"].as_str() {
            Some(r) => property(schema_of(r.rsplit('/').next().unwrap_or_default()), name),
            None => property(part, name),
        })
}

/// Typed access to the fields of a JSON object; `null` counts as absent. Failures accumulate in
/// `v`. Lengths and minimums come from the request type's schema.
pub(crate) struct Fields<'a> {
    pub map: &'a Map<String, Value>,
    pub v: Validation,
    schema: &'static Value,
    /// Answer only the first failure (`Request::FIRST_FAILURE_ONLY`).
    pub first_only: bool,
}

impl<'a> Fields<'a> {
    /// The fields of `map` read as the request type `T` documents them.
    pub fn of<T: utoipa::ToSchema>(map: &'a Map<String, Value>) -> Self {
        Self {
            map,
            v: Validation::new(),
            schema: schema_of(&T::name()),
            first_only: false,
        }
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// The documented property `name` (a missing one is a bug the request tests catch).
    fn documented(&self, name: &str) -> &'static Value {
        let p = property(self.schema, name);
        debug_assert!(p.is_some(), "{name} is not a documented property");
        p.unwrap_or(&Value::Null)
    }

    pub fn present(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Present with an explicit `null` (a PATCH that clears the field).
    pub fn is_null(&self, name: &str) -> bool {
        matches!(self.map.get(name), Some(Value::Null))
    }

    /// `is required` for each of `names` that is absent (or null).
    pub fn require(&mut self, names: &[&str]) {
        for &name in names {
            if !self.present(name) {
                self.v.fail(name, "is required");
            }
        }
    }

    /// Absent → `None`; `null` → `Some(None)`; a value → `Some(Some(v))` (or a failure noted).
    pub fn tri<T>(
        &mut self,
        name: &str,
        read: impl FnOnce(&mut Self, &str) -> Option<T>,
    ) -> Option<Option<T>> {
        if self.is_null(name) {
            Some(None)
        } else if self.present(name) {
            read(self, name).map(Some)
        } else {
            None
        }
    }

    /// A string within its documented `minLength` (1 when not given) and `maxLength`, after
    /// trimming surrounding whitespace.
    pub fn text(&mut self, name: &str) -> Option<String> {
        let sized = self.sized_text(name)?;
        self.noted(name, sized)
    }

    /// [`Self::text`] with a wrong length returned rather than noted (`Err(reason)`), for a
    /// family that answers it with its own code (v1's `invalid_url`); a value of another type
    /// is noted.
    pub fn sized_text(&mut self, name: &str) -> Option<Result<String, String>> {
        let p = self.documented(name);
        let max = p["maxLength"].as_u64();
        debug_assert!(max.is_some(), "{name} has no documented maxLength");
        let min = p["minLength"].as_u64().unwrap_or(1);
        self.sized(name, min as usize, max.unwrap_or(u64::MAX) as usize)
    }

    /// A string of `min..=max` characters (after trimming), for a field whose value the
    /// document states otherwise (an enum, an address) or whose lengths the service checks.
    pub fn string_within(&mut self, name: &str, min: usize, max: usize) -> Option<String> {
        let sized = self.sized(name, min, max)?;
        self.noted(name, sized)
    }

    fn sized(&mut self, name: &str, min: usize, max: usize) -> Option<Result<String, String>> {
        let t = self.string(name)?;
        let t = t.trim();
        let n = t.chars().count();
        Some(if n < min || n > max {
            Err(format!("must be {min} to {max} characters"))
        } else {
            Ok(t.to_string())
        })
    }

    /// The value, or its failure noted.
    fn noted<T>(&mut self, name: &str, r: Result<T, String>) -> Option<T> {
        r.map_err(|why| self.v.fail(name, why)).ok()
    }

    /// A string as sent, of any length (Base64, read further by its decoder).
    pub fn string(&mut self, name: &str) -> Option<String> {
        match self.get(name)? {
            Value::String(s) => Some(s.clone()),
            _ => {
                self.v.fail(name, "must be a string");
                None
            }
        }
    }

    /// A string whose lengths the service checks with its own reasons.
    pub fn loose_text(&mut self, name: &str) -> Option<String> {
        self.string_within(name, 0, 10_000)
    }

    /// The collected failures as one `VALIDATION_ERROR`, if any (only the first with
    /// `first_only`).
    pub fn finish(&mut self) -> Result<(), Error> {
        match std::mem::take(&mut self.v).into_result() {
            Err(Error::Validation(mut all)) if self.first_only => {
                all.truncate(1);
                Err(Error::Validation(all))
            }
            other => other,
        }
    }

    /// A whole number of at least its documented `minimum`. `3.0` is the whole number 3 (JSON
    /// Schema's `integer`; some JSON encoders write every number as a float).
    pub fn whole(&mut self, name: &str) -> Option<i64> {
        let min = self.documented(name)["minimum"].as_i64();
        debug_assert!(min.is_some(), "{name} has no documented minimum");
        self.whole_from(name, min.unwrap_or(i64::MIN))
    }

    fn whole_from(&mut self, name: &str, min: i64) -> Option<i64> {
        match whole(self.get(name)?) {
            Some(n) if n >= min => Some(n),
            _ => {
                self.v
                    .fail(name, format!("must be a whole number of at least {min}"));
                None
            }
        }
    }

    /// A whole number of either sign, `must be a whole number` otherwise; `null` is not one
    /// (the partner API's quota bodies, whose fields are required).
    pub fn whole_number(&mut self, name: &str) -> Option<i64> {
        let n = whole(self.map.get(name)?);
        if n.is_none() {
            self.v.fail(name, "must be a whole number");
        }
        n
    }

    /// A list of strings.
    pub fn strings(&mut self, name: &str) -> Option<Vec<String>> {
        let list = self.get(name)?.as_array().and_then(|a| {
            a.iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
        });
        if list.is_none() {
            self.v.fail(name, "must be a list of strings");
        }
        list
    }

    pub fn boolean(&mut self, name: &str) -> Option<bool> {
        match self.get(name)? {
            Value::Bool(b) => Some(*b),
            _ => {
                self.v.fail(name, "must be a boolean");
                None
            }
        }
    }

    /// Baht as a JSON number, at least 0, at most 2 decimals.
    pub fn amount(&mut self, name: &str) -> Option<Satang> {
        self.baht(name, false)
    }

    /// Baht as a JSON number of either sign, at most 2 decimals.
    pub fn signed_amount(&mut self, name: &str) -> Option<Satang> {
        self.baht(name, true)
    }

    fn baht(&mut self, name: &str, signed: bool) -> Option<Satang> {
        let parsed = match self.get(name)? {
            Value::Number(n) => match n.as_f64() {
                Some(x) if signed => {
                    Satang::from_baht_f64(x.abs()).map(|s| Satang(if x < 0.0 { -s.0 } else { s.0 }))
                }
                Some(x) => Satang::from_baht_f64(x),
                None => Err("must be a number"),
            },
            _ => Err("must be a number"),
        };
        match parsed {
            Ok(s) => Some(s),
            Err(reason) => {
                self.v.fail(name, reason);
                None
            }
        }
    }

    /// A text field of a form that is `true` or `false`.
    pub fn flag_text(&mut self, name: &str) -> Option<bool> {
        match self.map.get(name).and_then(Value::as_str)? {
            "true" => Some(true),
            "false" => Some(false),
            _ => {
                self.v.fail(name, "must be true or false");
                None
            }
        }
    }

    /// A text field of a form holding baht (`150.5`).
    pub fn amount_text(&mut self, name: &str) -> Option<Satang> {
        match Satang::parse(self.map.get(name).and_then(Value::as_str)?) {
            Ok(a) => Some(a),
            Err(why) => {
                self.v.fail(name, why);
                None
            }
        }
    }

    /// `callbackUrl`: where an async result is POSTed (checked further by the service).
    pub fn callback_url(&mut self) -> Option<String> {
        self.text(CALLBACK_URL)
    }
}

/// The one name of the callback field (a request's, a form's, a batch's).
pub(crate) const CALLBACK_URL: &str = "callbackUrl";

/// A JSON number that is whole (`3` or `3.0`).
fn whole(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| whole_float(n)),
        _ => None,
    }
}

/// A float that is a whole number (`3.0`) as that number; exact below 2^53.
fn whole_float(n: &serde_json::Number) -> Option<i64> {
    n.as_f64()
        .filter(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
        .map(|f| f as i64)
}

/// Base64 of an image of at most 4 MB (4/3 of it, plus padding).
pub(crate) const MAX_BASE64_CHARS: usize = MAX_IMAGE_BYTES.div_ceil(3) * 4;

/// The one Base64 image decoder (v1 and v2): `data:image/png;base64,....` or bare Base64; line
/// breaks are tolerated.
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>, Error> {
    use base64::Engine;
    let data = match text.split_once(',') {
        Some((head, rest)) if head.trim_start().starts_with("data:") => rest,
        _ => text,
    };
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if compact.len() > MAX_BASE64_CHARS {
        return Err(Error::ImageSizeTooLarge);
    }
    base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map_err(|_| Error::InvalidImageFormat)
}

#[cfg(test)]
mod tests {
    use super::Fields;
    use crate::body::parse_object;
    use crate::wire::admin::NewService;

    #[test]
    fn whole_numbers_may_be_written_as_floats() {
        let map = parse_object(br#"{"a":3.0,"b":3.5,"c":-2,"d":1e300,"e":"3"}"#).unwrap();
        let mut f = Fields::of::<NewService>(&map);
        assert_eq!(f.whole_from("a", 0), Some(3));
        assert_eq!(f.whole_from("b", 0), None);
        assert_eq!(f.whole_from("c", -5), Some(-2));
        assert_eq!(f.whole_from("d", 0), None);
        assert_eq!(f.whole_from("e", 0), None);
        let msg = f.finish().unwrap_err().public_message();
        assert!(msg.starts_with("b: must be a whole number"), "{msg}");
        assert!(msg.contains("d: ") && msg.contains("e: "), "{msg}");
    }

    #[test]
    fn limits_are_the_documented_ones() {
        // NewService: `name` 1 to 100 characters, `quota` at least 0 (its `#[schema]`).
        let long = "x".repeat(101);
        let body = format!(r#"{{"name":" {long} ","quota":-1}}"#);
        let map = parse_object(body.as_bytes()).unwrap();
        let mut f = Fields::of::<NewService>(&map);
        assert_eq!(f.text("name"), None);
        assert_eq!(f.whole("quota"), None);
        assert_eq!(
            f.finish().unwrap_err().public_message(),
            "name: must be 1 to 100 characters; quota: must be a whole number of at least 0"
        );
    }

    /// Every property a schema documents (its own and those of the schemas it combines).
    fn documented_names(schema: &serde_json::Value, out: &mut Vec<String>) {
        if let Some(p) = schema["properties"].as_object() {
            out.extend(p.keys().cloned());
        }
        for part in ["allOf", "oneOf"]
            .iter()
            .filter_map(|k| schema[k].as_array())
            .flatten()
        {
            match part["$ref"].as_str() {
                Some(r) => documented_names(super::schema_of(r.rsplit('/').next().unwrap()), out),
                None => documented_names(part, out),
            }
        }
    }

    /// `read` on an empty body and on one with every documented field set (to a value of the
    /// wrong type, then to a long text): every limit a request reads is in the document (a
    /// missing one fails a debug assertion).
    fn reads_only_documented_limits<T: super::Request>() {
        let mut names = Vec::new();
        documented_names(super::schema_of(&T::name()), &mut names);
        assert!(!names.is_empty(), "{} has no documented fields", T::name());
        let long = serde_json::Value::String("x".repeat(20_000));
        for value in [None, Some(serde_json::json!(1.5)), Some(long)] {
            let map: serde_json::Map<String, serde_json::Value> = value
                .map(|v| names.iter().map(|n| (n.clone(), v.clone())).collect())
                .unwrap_or_default();
            let _ = super::parse::<T>(&map);
        }
    }

    #[test]
    fn every_request_reads_its_limits_from_the_document() {
        use crate::wire::{admin as a, v2};
        reads_only_documented_limits::<v2::AsyncRequest>();
        reads_only_documented_limits::<v2::NewBankAccount>();
        reads_only_documented_limits::<v2::PartnerNewBankAccount>();
        reads_only_documented_limits::<v2::BankAccountUpdate>();
        reads_only_documented_limits::<v2::PartnerNewBranch>();
        reads_only_documented_limits::<v2::PartnerBranchPatch>();
        reads_only_documented_limits::<v2::SetQuota>();
        reads_only_documented_limits::<v2::AdjustQuota>();
        reads_only_documented_limits::<crate::wire::v1::V1VerifyRequest>();
        reads_only_documented_limits::<crate::wire::v1::V1QrRequest>();
        reads_only_documented_limits::<a::NewService>();
        reads_only_documented_limits::<a::ServiceChange>();
        reads_only_documented_limits::<a::NewBranch>();
        reads_only_documented_limits::<a::BranchChange>();
        reads_only_documented_limits::<a::RotateKey>();
        reads_only_documented_limits::<a::NewUser>();
        reads_only_documented_limits::<a::UserChange>();
        reads_only_documented_limits::<a::NewPartner>();
        reads_only_documented_limits::<a::PlanChange>();
        reads_only_documented_limits::<a::PackageChange>();
        reads_only_documented_limits::<a::SubscribeRequest>();
        reads_only_documented_limits::<a::AutoRenewChange>();
        reads_only_documented_limits::<a::CreditMove>();
        // Each form's text fields, every one set.
        let form = |schema: &str| {
            let mut names = Vec::new();
            documented_names(super::schema_of(schema), &mut names);
            let text = names
                .iter()
                .map(|n| (n.clone(), serde_json::json!("x")))
                .collect();
            crate::form::Form {
                files: Vec::new(),
                text,
            }
        };
        let _ = crate::wire::v2::read_form(form("VerifyForm"));
        let _ = crate::wire::v1::read_form(form("V1VerifyForm"));
    }

    #[test]
    fn first_failure_only_answers_the_first() {
        use crate::wire::v1::V1VerifyRequest;
        // Two inputs, then a payload too long: v1 answers the first failure alone.
        let long = "x".repeat(200);
        let body = format!(r#"{{"payload":"{long}","url":"https://example.com/a.png"}}"#);
        let map = parse_object(body.as_bytes()).unwrap();
        let e = super::parse::<V1VerifyRequest>(&map)
            .err()
            .expect("refused");
        let domain::Error::Validation(all) = e else {
            panic!("{e:?}")
        };
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].field, "url");
        // Alone, the long payload is the failure.
        let body = format!(r#"{{"payload":"{long}"}}"#);
        let map = parse_object(body.as_bytes()).unwrap();
        let msg = super::parse::<V1VerifyRequest>(&map)
            .err()
            .expect("refused");
        assert_eq!(msg.public_message(), "payload: must be 1 to 128 characters");
    }

    #[test]
    fn documented_line_values_are_the_domain_ones() {
        let p = &super::schema_of("BranchChange")["properties"];
        let values = |name: &str| -> Vec<String> {
            let r = p[name]["oneOf"][1]["$ref"].as_str().unwrap_or_default();
            let s = super::schema_of(r.rsplit('/').next().unwrap_or_default());
            s["enum"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let langs = values("lineLanguage");
        assert_eq!(langs, ["th", "en"], "{p}");
        assert!(langs.iter().all(|l| domain::line::Lang::parse(l).is_some()));
        let modes = values("lineGroupMode");
        assert_eq!(modes, ["silent", "verbose"], "{p}");
        assert!(modes
            .iter()
            .all(|m| domain::line::GroupMode::parse(m).is_some()));
    }
}
