//! Layering: defaults < file < environment (old flat aliases < nested names) < flags.

use crate::Config;
use figment::providers::{Format, Serialized, Toml};
use figment::value::{Dict, Value};
use figment::Figment;
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// Every environment variable of the configuration starts with this.
pub const ENV_PREFIX: &str = "SLIPVERIFY_";
/// The configuration file's path (the `--config` flag wins).
pub const ENV_CONFIG: &str = "SLIPVERIFY_CONFIG";

/// Today's flat variables and the keys they are aliases of. When both an alias and the
/// nested name are set, the nested name wins.
pub const ALIASES: &[(&str, &str)] = &[
    ("SLIPVERIFY_LISTEN", "server.listen"),
    ("SLIPVERIFY_TRUSTED_PROXIES", "server.trusted_proxies"),
    ("SLIPVERIFY_ADMIN_TOKEN", "server.admin_token"),
    ("SLIPVERIFY_MAX_UPLOADS", "server.max_uploads"),
    ("SLIPVERIFY_DATABASE_URL", "database.url"),
    ("SLIPVERIFY_DB_POOL", "database.pool"),
    ("SLIPVERIFY_JOB_POLL_MS", "jobs.poll_ms"),
    ("SLIPVERIFY_JOB_CONCURRENCY", "jobs.concurrency"),
    ("SLIPVERIFY_JOB_LEASE_SECS", "jobs.lease_secs"),
    (
        "SLIPVERIFY_VERIFY_RETRY_SCHEDULE",
        "jobs.verify_retry_schedule",
    ),
    (
        "SLIPVERIFY_OUTAGE_RETRY_SCHEDULE",
        "jobs.outage_retry_schedule",
    ),
    (
        "SLIPVERIFY_BILLING_RETRY_SCHEDULE",
        "jobs.billing_retry_schedule",
    ),
    (
        "SLIPVERIFY_WEBHOOK_RETRY_SCHEDULE",
        "webhooks.retry_schedule",
    ),
    ("SLIPVERIFY_WEBHOOK_TIMEOUT_MS", "webhooks.timeout_ms"),
    ("SLIPVERIFY_BILLING_URL", "billing.url"),
    ("SLIPVERIFY_BILLING_SECRET", "billing.secret"),
    ("SLIPVERIFY_BILLING_TIMEOUT_MS", "billing.timeout_ms"),
    ("SLIPVERIFY_EGRESS_ALLOW_CIDRS", "egress.allow_cidrs"),
    ("SLIPVERIFY_EGRESS_CA_FILE", "egress.ca_file"),
    ("SLIPVERIFY_SANDBOX_DELAY_MS", "sandbox.delay_ms"),
];

/// Keys whose values are secrets; each may be given as `<key>_file` instead.
pub(crate) const SECRET_KEYS: &[&str] = &[
    "admin_token",
    "secret",
    "api_key",
    "client_secret",
    "api_secret",
    "client_key",
];

/// Where the configuration comes from.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    file: Option<PathBuf>,
    env: Vec<(String, String)>,
    flags: Vec<(String, Value)>,
}

impl Sources {
    /// Defaults only.
    pub fn new() -> Self {
        Self::default()
    }

    /// This process's environment, and `file` (the `--config` flag) or else
    /// `SLIPVERIFY_CONFIG`.
    pub fn from_process(file: Option<PathBuf>) -> Self {
        let mut s = Self::new().env(std::env::vars());
        s.file = file;
        s
    }

    /// The TOML file (wins over `SLIPVERIFY_CONFIG` in the environment).
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.file = Some(path.into());
        self
    }

    /// Environment variables; only `SLIPVERIFY_*` ones are looked at.
    pub fn env<K: Into<String>, V: Into<String>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// A command-line flag's value for a dotted key: wins over everything.
    pub fn set(mut self, key: &str, value: impl Serialize) -> Self {
        let value = Value::serialize(value).unwrap_or_else(|e| Value::from(e.to_string()));
        self.flags.push((key.to_string(), value));
        self
    }

    /// The file that will be read: the flag's, else `SLIPVERIFY_CONFIG`'s.
    pub fn file_path(&self) -> Option<PathBuf> {
        self.file.clone().or_else(|| {
            self.env
                .iter()
                .find(|(k, v)| k == ENV_CONFIG && !v.trim().is_empty())
                .map(|(_, v)| PathBuf::from(v.trim()))
        })
    }
}

/// Why the configuration cannot be used: one line per problem, each naming its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub problems: Vec<String>,
}

impl ConfigError {
    fn one(p: impl Into<String>) -> Self {
        Self {
            problems: vec![p.into()],
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problems.join("\n"))
    }
}

impl std::error::Error for ConfigError {}

/// An environment variable's dotted key: an alias's key, or `SLIPVERIFY_A__B__C` →
/// `a.b.c`. Other `SLIPVERIFY_*` variables (`SLIPVERIFY_LOG`, `SLIPVERIFY_CONFIG`, test-only
/// ones) are not configuration keys.
pub(crate) fn env_key(name: &str) -> Option<(String, bool)> {
    if let Some((_, key)) = ALIASES.iter().find(|(alias, _)| *alias == name) {
        return Some((key.to_string(), true));
    }
    let rest = name.strip_prefix(ENV_PREFIX)?;
    if !rest.contains("__") {
        return None;
    }
    Some((rest.to_ascii_lowercase().replace("__", "."), false))
}

/// Reads, layers, resolves `*_file` secrets, deserializes and validates.
pub fn load(sources: &Sources) -> Result<Config, ConfigError> {
    let mut fig = Figment::new();
    if let Some(path) = sources.file_path() {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ConfigError::one(format!("cannot read {}: {e}", path.display())))?;
        // Parsed here, so a syntax error says which file and where — but never shows the
        // line itself, which may hold a secret.
        toml::from_str::<toml::Table>(&text)
            .map_err(|e| ConfigError::one(syntax_error(&path.display().to_string(), &text, &e)))?;
        fig = fig.merge(Toml::string(&text));
    }
    let mut env: Vec<(String, bool, &str)> = sources
        .env
        .iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .filter_map(|(k, v)| env_key(k).map(|(key, alias)| (key, alias, v.as_str())))
        .collect();
    // Aliases first, so the nested name wins when both are set.
    env.sort_by_key(|(_, alias, _)| !alias);
    for (key, _, raw) in env {
        if key.split('.').any(str::is_empty) {
            return Err(ConfigError::one(format!("{key}: not a valid key")));
        }
        let value = env_value(raw);
        fig = fig.merge(Serialized::default(&key, value));
    }
    for (key, value) in &sources.flags {
        fig = fig.merge(Serialized::default(key, value.clone()));
    }
    let mut tree: Dict = fig.extract().map_err(|e| figment_error(&e))?;
    let mut problems = Vec::new();
    resolve_secret_files(&mut tree, "", &mut problems);
    if !problems.is_empty() {
        return Err(ConfigError { problems });
    }
    let cfg: Config = Value::from(tree)
        .deserialize()
        .map_err(|e| figment_error(&e))?;
    cfg.validate()
        .map_err(|problems| ConfigError { problems })?;
    Ok(cfg)
}

/// An environment value as TOML would read it when it is a number, a boolean or an array
/// (`30`, `true`, `["kbank", "upstream"]`); anything else is the string as given.
fn env_value(raw: &str) -> Value {
    let parsed = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .filter(|v| {
            matches!(
                v,
                toml::Value::Integer(_)
                    | toml::Value::Float(_)
                    | toml::Value::Boolean(_)
                    | toml::Value::Array(_)
            )
        });
    match parsed.map(Value::serialize) {
        Some(Ok(v)) => v,
        _ => Value::from(raw.to_string()),
    }
}

/// `x_file = PATH` → `x = <the file's contents, less a trailing newline>`, for secret keys.
fn resolve_secret_files(dict: &mut Dict, path: &str, problems: &mut Vec<String>) {
    let file_keys: Vec<String> = dict
        .keys()
        .filter(|k| {
            k.strip_suffix("_file")
                .is_some_and(|stem| SECRET_KEYS.contains(&stem))
        })
        .cloned()
        .collect();
    for fk in file_keys {
        let key = fk.trim_end_matches("_file").to_string();
        let dotted = join(path, &key);
        if dict.contains_key(&key) {
            problems.push(format!("{dotted}: give either {key} or {fk}, not both"));
            continue;
        }
        let Some(v) = dict.remove(&fk) else { continue };
        let Some(file) = v.as_str().map(str::to_owned) else {
            problems.push(format!("{}: must be a file path", join(path, &fk)));
            continue;
        };
        match std::fs::read_to_string(Path::new(&file)) {
            Ok(s) => {
                let s = s.strip_suffix('\n').unwrap_or(&s);
                let s = s.strip_suffix('\r').unwrap_or(s);
                dict.insert(key, Value::from(s.to_string()));
            }
            Err(e) => problems.push(format!("{}: cannot read {file}: {e}", join(path, &fk))),
        }
    }
    for (k, v) in dict.iter_mut() {
        if let Value::Dict(_, d) = v {
            resolve_secret_files(d, &join(path, k), problems);
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A TOML syntax error as `FILE: line N, key K: what` — the position and the key, never the
/// offending text (toml's own Display quotes the line, secret and all).
fn syntax_error(file: &str, text: &str, e: &toml::de::Error) -> String {
    let what = e.message().lines().next().unwrap_or("invalid TOML").trim();
    let Some(at) = e.span().map(|s| s.start.min(text.len())) else {
        return format!("{file}: {what}");
    };
    let line_no = text[..at].matches('\n').count() + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("");
    // The table in effect and the key of the line, both names only.
    let table = text
        .lines()
        .take(line_no - 1)
        .filter_map(|l| {
            let l = l.trim();
            (l.starts_with('[') && !l.contains('=')).then(|| l.trim_matches(['[', ']', ' ']))
        })
        .last();
    let key = line.split_once('=').map(|(k, _)| k.trim()).filter(|k| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.\"".contains(c))
    });
    match (table, key) {
        (Some(t), Some(k)) => format!("{file}: line {line_no}, key {t}.{k}: {what}"),
        (None, Some(k)) => format!("{file}: line {line_no}, key {k}: {what}"),
        _ => format!("{file}: line {line_no}: {what}"),
    }
}

/// A value's kind, never the value (it may be a secret).
fn kind_of(a: &figment::error::Actual) -> &'static str {
    use figment::error::Actual as A;
    match a {
        A::Bool(_) => "a boolean",
        A::Unsigned(_) | A::Signed(_) => "an integer",
        A::Float(_) => "a float",
        A::Char(_) | A::Str(_) => "a string",
        A::Bytes(_) => "bytes",
        A::Unit | A::Option => "nothing",
        A::Seq => "a list",
        A::Map => "a table",
        _ => "another kind of value",
    }
}

/// figment's errors as `dotted.key: reason`, one per problem; a value is never echoed.
fn figment_error(e: &figment::Error) -> ConfigError {
    use figment::error::Kind;
    let problems = e
        .clone()
        .into_iter()
        .map(|e| {
            let path = e.path.join(".");
            match &e.kind {
                Kind::UnknownField(field, expected) => {
                    let known = if expected.is_empty() {
                        String::new()
                    } else {
                        format!(" (known: {})", expected.join(", "))
                    };
                    // figment's path sometimes already ends with the field.
                    let key = if e.path.last() == Some(field) {
                        path.clone()
                    } else {
                        join(&path, field)
                    };
                    format!("{key}: unknown key{known}")
                }
                Kind::InvalidType(actual, expected) => {
                    format!("{path}: expected {expected}, found {}", kind_of(actual))
                }
                Kind::InvalidValue(actual, expected) => {
                    format!("{path}: invalid {}, expected {expected}", kind_of(actual))
                }
                Kind::UnknownVariant(_, expected) => {
                    format!(
                        "{path}: unknown variant, expected one of {}",
                        expected.join(", ")
                    )
                }
                Kind::Message(m) => format!("{path}: {m}"),
                other if path.is_empty() => other.to_string(),
                other => format!("{path}: {other}"),
            }
        })
        .collect();
    ConfigError { problems }
}
