//! Where things live, the limits in force and how the summariser is reached.
//!
//! Each setting comes from the first of: a command-line flag, an environment variable, the
//! config file, the default. The config file is TOML, at `--config FILE`, `SCRATCHPAD_CONFIG`
//! or the per-user config folder (`~/.config/scratchpad-mcp/config.toml` on Linux); only an
//! explicitly named file must exist. Stdio clients pass few variables to the servers they
//! start, so everything can also be set in the file. The API key is the exception: it is read
//! from `ANTHROPIC_API_KEY` only, so that it never sits in a file that gets shared.
//!
//! Limits are the guest's: their names, defaults and ranges come from
//! [`scratchpad_guest::limits::CONFIGURABLE`], so this module has no copy of any number.

use crate::bindings::LimitOverrides;
use crate::storage::DatabaseUrl;
use crate::summariser::{AnthropicConfig, DEFAULT_BASE_URL, DEFAULT_MODEL};
use scratchpad_guest::limits::{CONFIGURABLE, Limit};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

/// The file name of the store inside the per-user data folder.
const DB_FILE: &str = "scratchpad.db";

/// The config file's name inside the per-user config folder.
const CONFIG_FILE: &str = "config.toml";

/// Everything needed to open a [`crate::Service`].
#[derive(Clone, Debug)]
pub struct Settings {
    /// The SQLite file, used when no `database` is given.
    pub db: PathBuf,
    /// The PostgreSQL database, for hosted deployments; none: the SQLite file.
    pub database: Option<DatabaseUrl>,
    /// Where the compiled component is cached; `None` compiles at every start.
    pub cache_dir: Option<PathBuf>,
    /// The limits the operator set; the rest are the guest's defaults.
    pub limits: LimitOverrides,
    /// The summariser.
    pub anthropic: AnthropicConfig,
    /// Hosted mode (`serve --http`).
    pub http: HttpSettings,
}

/// Where hosted mode listens, whom it lets in, and how fast.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSettings {
    /// The address to listen on; loopback unless told otherwise.
    #[serde(default)]
    pub listen: Option<std::net::SocketAddr>,
    /// `Host` values accepted besides loopback's (DNS-rebinding protection).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted; any other Origin gets 403.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Tool calls per second each agent may make (token bucket); none: no limit.
    #[serde(default)]
    pub calls_per_second: Option<f64>,
    /// Calls an agent may make at once above that rate.
    #[serde(default)]
    pub burst: Option<u32>,
    /// `summarize_file` calls each agent may make a day (a bucket refilled over the day,
    /// cached answers included); none: no budget.
    #[serde(default)]
    pub summaries_per_day: Option<u32>,
    /// Connections held open at once; one more is closed at once.
    #[serde(default)]
    pub max_connections: Option<u32>,
    /// Seconds a client may take to send a request's headers, and may leave its connection
    /// idle between requests.
    #[serde(default)]
    pub header_timeout_seconds: Option<u32>,
    /// Seconds a client may take to send a request's body.
    #[serde(default)]
    pub body_timeout_seconds: Option<u32>,
    /// Calls (tool calls, resource reads and listings) running at once, for every key.
    #[serde(default)]
    pub max_calls_in_flight: Option<u32>,
    /// Calls running at once for one key.
    #[serde(default)]
    pub max_calls_in_flight_per_key: Option<u32>,
    /// The API keys, hashed.
    #[serde(default)]
    pub keys: Vec<crate::keys::KeyEntry>,
    /// OAuth access tokens accepted beside the keys ([`crate::oauth`]).
    #[serde(default)]
    pub oauth: Option<crate::oauth::OAuthSettings>,
}

/// One of hosted mode's bounds on what a client may hold: its name under `[http]`, its
/// default and the values it may be given.
#[derive(Debug)]
pub struct HttpBound {
    /// Its name under `[http]`.
    pub name: &'static str,
    /// Its value unless configured.
    pub default: u32,
    /// The values it may be given.
    pub range: std::ops::RangeInclusive<u32>,
}

/// Hosted mode's bounds, in [`HttpSettings::bounds`]' order. The defaults hold a client that
/// opens thousands of idle connections, or sends a burst of heavy calls and walks away, to a
/// share of the server that leaves every other client served.
pub const HTTP_BOUNDS: [HttpBound; 5] = [
    HttpBound {
        name: "max_connections",
        default: 8_192,
        range: 1..=1_000_000,
    },
    HttpBound {
        name: "header_timeout_seconds",
        default: 10,
        range: 1..=3_600,
    },
    HttpBound {
        name: "body_timeout_seconds",
        default: 30,
        range: 1..=3_600,
    },
    HttpBound {
        name: "max_calls_in_flight",
        default: 64,
        range: 1..=100_000,
    },
    HttpBound {
        name: "max_calls_in_flight_per_key",
        default: 16,
        range: 1..=100_000,
    },
];

impl HttpSettings {
    /// The configured values of [`HTTP_BOUNDS`], in its order.
    fn configured_bounds(&self) -> [Option<u32>; 5] {
        [
            self.max_connections,
            self.header_timeout_seconds,
            self.body_timeout_seconds,
            self.max_calls_in_flight,
            self.max_calls_in_flight_per_key,
        ]
    }

    /// Every bound in force, in [`HTTP_BOUNDS`]' order: the configured value, else the default.
    fn bounds(&self) -> [u32; 5] {
        let configured = self.configured_bounds();
        std::array::from_fn(|i| configured[i].unwrap_or(HTTP_BOUNDS[i].default))
    }

    /// The bounds in force, by name.
    pub fn limits(&self) -> HttpLimits {
        let [
            max_connections,
            header_timeout_seconds,
            body_timeout_seconds,
            max_calls_in_flight,
            max_calls_in_flight_per_key,
        ] = self.bounds();
        HttpLimits {
            max_connections,
            header_timeout_seconds,
            body_timeout_seconds,
            max_calls_in_flight,
            max_calls_in_flight_per_key,
        }
    }
}

/// Hosted mode's bounds in force (see [`HTTP_BOUNDS`] for what each bounds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Connections open at once.
    pub max_connections: u32,
    /// Seconds to send a request's headers, or to sit idle between requests.
    pub header_timeout_seconds: u32,
    /// Seconds to send a request's body.
    pub body_timeout_seconds: u32,
    /// Calls running at once, for every key.
    pub max_calls_in_flight: u32,
    /// Calls running at once for one key.
    pub max_calls_in_flight_per_key: u32,
}

/// The rates an agent may be given: from one call in about 17 minutes (a wait always fits a
/// `Duration`) to a million a second.
pub const CALLS_PER_SECOND: std::ops::RangeInclusive<f64> = 0.001..=1_000_000.0;

/// The summary budgets an agent may be given, a day.
pub const SUMMARIES_PER_DAY: std::ops::RangeInclusive<u32> = 1..=1_000_000;

/// `value` of the setting `name` if it lies in `range`, else the sentence that says so.
fn within<T: PartialOrd + fmt::Display>(
    name: &str,
    value: T,
    range: &std::ops::RangeInclusive<T>,
) -> Result<(), String> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "{name} = {value} is out of range: it must be {} to {}",
            range.start(),
            range.end()
        ))
    }
}

/// Where hosted mode listens unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8765";

/// What the command line says, before the environment and the config file are consulted.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--db`.
    pub db: Option<PathBuf>,
    /// `--database`.
    pub database: Option<String>,
    /// `--cache-dir`.
    pub cache_dir: Option<PathBuf>,
}

/// Why the settings could not be worked out. Every message names the file, key or variable.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// No per-user folder could be found for the store.
    #[error(
        "no per-user data folder is known on this system; pass --db PATH or set SCRATCHPAD_DB_PATH"
    )]
    NoDataDir,
    /// The config file could not be read.
    #[error("cannot read the config file {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The config file is not valid TOML, or has an unknown key or a value of the wrong type.
    #[error("config file {path}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong, as the TOML parser says (with line and column).
        reason: String,
    },
    /// The database is not a PostgreSQL URL.
    #[error("{origin}: {reason}")]
    Database {
        /// The flag, variable or file it came from.
        origin: String,
        /// Why, with the URL shown without its password.
        reason: crate::storage::NotAUrl,
    },
    /// The SQLite file was given as a URL, most likely a PostgreSQL database's, which
    /// would otherwise become a folder named after its scheme holding a new, empty store.
    #[error(
        "{origin}: the SQLite file's path is a URL ({scheme}://...); a PostgreSQL database is given with --database or $SCRATCHPAD_DATABASE_URL"
    )]
    PathIsUrl {
        /// The flag, variable or file it came from.
        origin: String,
        /// The URL's scheme: the rest may hold a password.
        scheme: String,
    },
    /// A limit is out of its range, or an environment variable is not a number.
    #[error("{origin}: {reason}")]
    Limit {
        /// The file or variable it came from.
        origin: String,
        /// The setting, its value and its range.
        reason: String,
    },
}

/// Where a setting's value came from, for `--print-config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A command-line flag.
    Flag(&'static str),
    /// An environment variable.
    Env(String),
    /// The config file.
    File,
    /// Nothing set it.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag(flag) => write!(f, "from {flag}"),
            Source::Env(var) => write!(f, "from ${var}"),
            Source::File => f.write_str("from the config file"),
            Source::Default => f.write_str("default"),
        }
    }
}

/// The settings in force, and where each came from.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The settings.
    pub settings: Settings,
    /// The config file read, if any.
    pub config_file: Option<PathBuf>,
    /// The config file `keys add` and `keys revoke` change: the one read, else the
    /// per-user one (created when needed).
    pub keys_file: Option<PathBuf>,
    /// `(key, TOML value, source)` for every setting, in the config file's order.
    report: Vec<(String, String, Source)>,
}

/// The config file as written. Unknown keys are refused, so a typo is not silently ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    store: StoreSection,
    #[serde(default)]
    limits: BTreeMap<String, u64>,
    #[serde(default)]
    summariser: SummariserSection,
    #[serde(default)]
    http: HttpSettings,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreSection {
    path: Option<PathBuf>,
    database: Option<String>,
    cache_dir: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SummariserSection {
    model: Option<String>,
    base_url: Option<String>,
}

/// The environment variable that sets a limit: `SCRATCHPAD_` and its name in capitals.
pub fn limit_var(limit: &Limit) -> String {
    format!("SCRATCHPAD_{}", limit.name.to_ascii_uppercase())
}

/// The scheme of a path written as a URL (`postgres://...`), which no SQLite file's path is.
/// One letter is a Windows drive (`C://...`), not a scheme.
fn url_scheme(path: &Path) -> Option<&str> {
    let (scheme, _) = path.to_str()?.split_once("://")?;
    let is_scheme = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    is_scheme.then_some(scheme)
}

/// Picks the first value given: flag, variable, file, else none.
fn first<T>(
    flag: Option<(T, &'static str)>,
    env: Option<(T, &str)>,
    file: Option<T>,
) -> Option<(T, Source)> {
    flag.map(|(v, f)| (v, Source::Flag(f)))
        .or_else(|| env.map(|(v, var)| (v, Source::Env(var.to_owned()))))
        .or_else(|| file.map(|v| (v, Source::File)))
}

impl Settings {
    /// Resolves the settings from `flags`, the process environment and the config file.
    pub fn resolve(flags: Flags) -> Result<Resolved, SettingsError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Self::resolve_with(
            flags,
            &env,
            dirs::config_dir(),
            dirs::data_dir(),
            dirs::cache_dir(),
        )
    }

    /// The same with the environment and the per-user folders given (tests set their own).
    pub fn resolve_with(
        flags: Flags,
        env: &dyn Fn(&str) -> Option<String>,
        config_dir: Option<PathBuf>,
        data_dir: Option<PathBuf>,
        cache_dir: Option<PathBuf>,
    ) -> Result<Resolved, SettingsError> {
        let explicit = flags
            .config
            .clone()
            .or_else(|| env("SCRATCHPAD_CONFIG").map(PathBuf::from));
        let default = config_dir.map(|d| d.join("scratchpad-mcp").join(CONFIG_FILE));
        let (file, config_file) = match explicit {
            Some(path) => (read_config(&path)?, Some(path)),
            None => match default.clone().filter(|p| p.exists()) {
                Some(path) => (read_config(&path)?, Some(path)),
                None => (ConfigFile::default(), None),
            },
        };
        let keys_file = config_file.clone().or(default);
        let mut resolver = Resolver {
            env,
            origin: config_file
                .as_deref()
                .map_or_else(String::new, |p| format!("config file {}", p.display())),
            report: Vec::new(),
        };
        let (db, database, cache_dir) = resolver.store(&flags, file.store, data_dir, cache_dir)?;
        let limits = resolver.limits(&file.limits)?;
        let anthropic = resolver.summariser(file.summariser);
        resolver.check_http(&file.http)?;
        let settings = Settings {
            db,
            database,
            cache_dir,
            limits,
            anthropic,
            http: file.http,
        };
        Ok(Resolved {
            settings,
            config_file,
            keys_file,
            report: resolver.report,
        })
    }
}

/// What resolving the settings reads and notes: the environment, where the config file's
/// values come from (for errors), and the value chosen for each key with its source.
struct Resolver<'e> {
    env: &'e dyn Fn(&str) -> Option<String>,
    origin: String,
    report: Vec<(String, String, Source)>,
}

impl Resolver<'_> {
    /// Where a value from `source` came from, as an error names it.
    fn origin_of(&self, source: &Source) -> String {
        match source {
            Source::Flag(flag) => (*flag).to_owned(),
            Source::Env(var) => format!("${var}"),
            Source::File | Source::Default => self.origin.clone(),
        }
    }

    fn note(&mut self, key: &str, value: String, source: Source) {
        self.report.push((key.to_owned(), value, source));
    }

    /// `[store]`: the SQLite file, the PostgreSQL database, the compiled-component cache.
    fn store(
        &mut self,
        flags: &Flags,
        section: StoreSection,
        data_dir: Option<PathBuf>,
        cache_dir: Option<PathBuf>,
    ) -> Result<(PathBuf, Option<DatabaseUrl>, Option<PathBuf>), SettingsError> {
        let env = self.env;
        let db = match first(
            flags.db.clone().map(|p| (p, "--db")),
            env("SCRATCHPAD_DB_PATH").map(|p| (PathBuf::from(p), "SCRATCHPAD_DB_PATH")),
            section.path,
        ) {
            Some((path, source)) => (path, source),
            None => (
                data_dir
                    .ok_or(SettingsError::NoDataDir)?
                    .join("scratchpad-mcp")
                    .join(DB_FILE),
                Source::Default,
            ),
        };
        if let Some(scheme) = url_scheme(&db.0) {
            return Err(SettingsError::PathIsUrl {
                origin: self.origin_of(&db.1),
                scheme: scheme.to_owned(),
            });
        }
        self.note("store.path", toml_str(&db.0.display().to_string()), db.1);
        let database = match first(
            flags.database.clone().map(|u| (u, "--database")),
            env("SCRATCHPAD_DATABASE_URL").map(|u| (u, "SCRATCHPAD_DATABASE_URL")),
            section.database.filter(|u| !u.trim().is_empty()),
        ) {
            Some((text, source)) => {
                let url = DatabaseUrl::parse(&text).map_err(|reason| SettingsError::Database {
                    origin: self.origin_of(&source),
                    reason,
                })?;
                self.note("store.database", toml_str(&url.to_string()), source);
                Some(url)
            }
            None => {
                self.note(
                    "store.database",
                    "\"\" # none: the SQLite file at store.path".into(),
                    Source::Default,
                );
                None
            }
        };
        let cache = match first(
            flags.cache_dir.clone().map(|p| (p, "--cache-dir")),
            env("SCRATCHPAD_CACHE_DIR").map(|p| (PathBuf::from(p), "SCRATCHPAD_CACHE_DIR")),
            section.cache_dir,
        ) {
            Some((dir, source)) => (Some(dir), source),
            None => (cache_dir.map(|d| d.join("scratchpad-mcp")), Source::Default),
        };
        let shown = cache.0.as_deref().map_or_else(
            || "\"\" # none: the component is compiled at every start".into(),
            |d| toml_str(&d.display().to_string()),
        );
        self.note("store.cache_dir", shown, cache.1);
        Ok((db.0, database, cache.0))
    }

    /// `[limits]`: each limit from its environment variable or the file, within its range.
    fn limits(&mut self, section: &BTreeMap<String, u64>) -> Result<LimitOverrides, SettingsError> {
        for name in section.keys() {
            if !CONFIGURABLE.iter().any(|l| l.name == name) {
                return Err(SettingsError::Limit {
                    origin: self.origin.clone(),
                    reason: format!(
                        "unknown limit {name:?}; the limits are {}",
                        CONFIGURABLE.map(|l| l.name).join(", ")
                    ),
                });
            }
        }
        let mut values = BTreeMap::new();
        for limit in CONFIGURABLE {
            let var = limit_var(&limit);
            let from_env = match (self.env)(&var) {
                Some(text) => Some((
                    text.trim()
                        .parse::<u64>()
                        .map_err(|_| SettingsError::Limit {
                            origin: format!("${var}"),
                            reason: format!("{text:?} is not a whole number"),
                        })?,
                    var.as_str(),
                )),
                None => None,
            };
            let chosen = first(None, from_env, section.get(limit.name).copied());
            let key = format!("limits.{}", limit.name);
            match chosen {
                Some((value, source)) => {
                    limit.check(value).map_err(|reason| SettingsError::Limit {
                        origin: self.origin_of(&source),
                        reason,
                    })?;
                    values.insert(limit.name, value);
                    self.note(&key, value.to_string(), source);
                }
                None => self.note(&key, limit.default.to_string(), Source::Default),
            }
        }
        let u32_of = |name| values.get(name).map(|&v| v as u32);
        // Each value was checked against its range, which for the u32 limits ends at 1,000.
        Ok(LimitOverrides {
            max_files: values.get("max_files").copied(),
            max_log_entries: values.get("max_log_entries").copied(),
            max_total_bytes: values.get("max_total_bytes").copied(),
            max_write_bytes: values.get("max_write_bytes").copied(),
            max_log_entry_bytes: values.get("max_log_entry_bytes").copied(),
            versions_kept: u32_of("versions_kept"),
            log_page_size: u32_of("log_page_size"),
            max_response_tokens: values.get("max_response_tokens").copied(),
        })
    }

    /// `[summariser]`: the model and the API's address; the key only from the environment.
    fn summariser(&mut self, section: SummariserSection) -> AnthropicConfig {
        let env = self.env;
        let model = first(
            None,
            env("SCRATCHPAD_SUMMARY_MODEL").map(|m| (m, "SCRATCHPAD_SUMMARY_MODEL")),
            section.model,
        )
        .unwrap_or_else(|| (DEFAULT_MODEL.into(), Source::Default));
        self.note("summariser.model", toml_str(&model.0), model.1);
        let base_url = first(
            None,
            env("ANTHROPIC_BASE_URL").map(|u| (u, "ANTHROPIC_BASE_URL")),
            section.base_url,
        )
        .unwrap_or_else(|| (DEFAULT_BASE_URL.into(), Source::Default));
        self.note("summariser.base_url", toml_str(&base_url.0), base_url.1);
        AnthropicConfig {
            api_key: env("ANTHROPIC_API_KEY"),
            base_url: base_url.0,
            model: model.0,
        }
    }

    /// `[http]`: every bound within its range, every key for agents a call can name, and the
    /// OAuth settings sound.
    fn check_http(&self, http: &HttpSettings) -> Result<(), SettingsError> {
        let out_of_range = |reason| SettingsError::Limit {
            origin: self.origin.clone(),
            reason,
        };
        if let Some(rate) = http.calls_per_second {
            within("http.calls_per_second", rate, &CALLS_PER_SECOND).map_err(out_of_range)?;
        }
        if let Some(per_day) = http.summaries_per_day {
            within("http.summaries_per_day", per_day, &SUMMARIES_PER_DAY).map_err(out_of_range)?;
        }
        if let Some(oauth) = &http.oauth {
            oauth.check().map_err(|e| out_of_range(e.to_string()))?;
        }
        for key in &http.keys {
            crate::keys::check_agents(&key.name, &key.agents).map_err(out_of_range)?;
        }
        for (bound, value) in HTTP_BOUNDS.iter().zip(http.configured_bounds()) {
            if let Some(value) = value {
                within(&format!("http.{}", bound.name), value, &bound.range)
                    .map_err(out_of_range)?;
            }
        }
        Ok(())
    }
}

impl Settings {
    /// The store in use, for messages: the database (without its password) or the file.
    pub fn store_name(&self) -> String {
        match &self.database {
            Some(url) => url.to_string(),
            None => self.db.display().to_string(),
        }
    }
}

impl Resolved {
    /// The settings in force as a config file, each line saying where its value came from.
    /// The API key is never shown: only whether it is set.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# scratchpad-mcp {}: the settings in force",
            env!("CARGO_PKG_VERSION")
        );
        let _ = match &self.config_file {
            Some(path) => writeln!(out, "# config file: {}", path.display()),
            None => writeln!(out, "# config file: none found"),
        };
        let key_state = if self.settings.anthropic.api_key.is_some() {
            "set"
        } else {
            "not set"
        };
        let _ = writeln!(out, "# ANTHROPIC_API_KEY: {key_state}");
        let http = &self.settings.http;
        let listen = http
            .listen
            .map_or(DEFAULT_LISTEN.to_owned(), |a| a.to_string());
        let names: Vec<&str> = http.keys.iter().map(|k| k.name.as_str()).collect();
        let _ = writeln!(
            out,
            "# serve --http: listens on {listen}; {} API key(s){}",
            names.len(),
            if names.is_empty() {
                String::new()
            } else {
                format!(": {}", names.join(", "))
            }
        );
        let mut section = "";
        for (key, value, source) in &self.report {
            let (table, name) = key.split_once('.').unwrap_or(("", key));
            if table != section {
                let _ = writeln!(out, "\n[{table}]");
                section = table;
            }
            let line = format!("{name} = {value}");
            let _ = writeln!(out, "{line:<48} # {source}");
        }
        out
    }
}

/// A TOML basic string.
fn toml_str(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn read_config(path: &Path) -> Result<ConfigFile, SettingsError> {
    let text = std::fs::read_to_string(path).map_err(|e| SettingsError::Unreadable {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let invalid = |reason: String| SettingsError::Invalid {
        path: path.display().to_string(),
        reason,
    };
    let document =
        toml::de::Deserializer::parse(&text).map_err(|e| invalid(e.message().to_owned()))?;
    serde_path_to_error::deserialize(document).map_err(|e| {
        let (key, e) = (e.path().to_string(), e.into_inner());
        let at = location(&text, e.span());
        invalid(
            match scratchpad_guest::json::refusal::misfit(e.message(), "a table") {
                Some(m) if key != "." => format!("{key} must be {} (got {}){at}", m.takes, m.got),
                _ => e.message().to_owned() + &at,
            },
        )
    })
}

/// " (line L, column C)" for a byte span of `text`, when the parser gave one.
fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let Some(span) = span else {
        return String::new();
    };
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!(" (line {line}, column {column})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::NO_OVERRIDES;
    use std::collections::HashMap;

    fn resolve(config: Option<&str>, vars: &[(&str, &str)]) -> Result<Resolved, SettingsError> {
        let dir = tempfile::tempdir().unwrap();
        let mut flags = Flags::default();
        if let Some(text) = config {
            let path = dir.path().join("config.toml");
            std::fs::write(&path, text).unwrap();
            flags.config = Some(path);
        }
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::resolve_with(
            flags,
            &|name| vars.get(name).cloned(),
            None,
            Some(dir.path().join("data")),
            None,
        )
    }

    #[test]
    fn nothing_set_means_every_default() {
        let r = resolve(None, &[]).unwrap();
        assert_eq!(r.settings.limits, NO_OVERRIDES);
        assert!(r.settings.db.ends_with("data/scratchpad-mcp/scratchpad.db"));
        assert_eq!(r.settings.anthropic.model, DEFAULT_MODEL);
        assert!(r.to_toml().contains("versions_kept = 10"));
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        let config =
            "[limits]\nversions_kept = 3\nmax_files = 7\n[summariser]\nmodel = \"m-file\"\n";
        let r = resolve(
            Some(config),
            &[
                ("SCRATCHPAD_VERSIONS_KEPT", "4"),
                ("SCRATCHPAD_SUMMARY_MODEL", "m-env"),
            ],
        )
        .unwrap();
        assert_eq!(r.settings.limits.versions_kept, Some(4));
        assert_eq!(r.settings.limits.max_files, Some(7));
        assert_eq!(r.settings.anthropic.model, "m-env");
        let shown = r.to_toml();
        assert!(shown.contains("$SCRATCHPAD_VERSIONS_KEPT"), "{shown}");
        assert!(shown.contains("max_files = 7"), "{shown}");
    }

    #[test]
    fn a_database_url_is_taken_and_shown_without_its_password() {
        let r = resolve(
            Some("[store]\ndatabase = \"postgres://file:f1le@db/sp\"\n"),
            &[("SCRATCHPAD_DATABASE_URL", "postgres://sp:s3cret@db:5432/sp")],
        )
        .unwrap();
        let url = r.settings.database.as_ref().unwrap();
        assert_eq!(url.to_string(), "postgres://sp:***@db:5432/sp");
        assert_eq!(r.settings.store_name(), "postgres://sp:***@db:5432/sp");
        let shown = r.to_toml();
        assert!(
            shown.contains("database = \"postgres://sp:***@db:5432/sp\""),
            "{shown}"
        );
        assert!(!shown.contains("s3cret") && !format!("{r:?}").contains("s3cret"));
        let e = resolve(Some("[store]\ndatabase = \"mysql://u:pw@db/x\"\n"), &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("must be a postgres:// or postgresql:// URL"),
            "{e}"
        );
        assert!(!e.to_string().contains(":pw@"), "{e}");
        assert!(resolve(None, &[]).unwrap().settings.database.is_none());
    }

    #[test]
    fn a_url_given_as_the_sqlite_file_is_refused_without_its_password() {
        let url = "postgres://sp:s3cret@db/sp";
        let flags = Flags {
            db: Some(url.into()),
            ..Flags::default()
        };
        let e = Settings::resolve_with(flags, &|_| None, None, None, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--db: the SQLite file's path is a URL (postgres://...); a PostgreSQL database is given with --database or $SCRATCHPAD_DATABASE_URL"
        );
        let e = resolve(None, &[("SCRATCHPAD_DB_PATH", "file:///tmp/x.db")]).unwrap_err();
        assert!(e.to_string().starts_with("$SCRATCHPAD_DB_PATH: "), "{e}");
        assert!(e.to_string().contains("(file://...)"), "{e}");
        let e = resolve(Some(&format!("[store]\npath = \"{url}\"\n")), &[]).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        assert!(matches!(e, SettingsError::PathIsUrl { .. }), "{e}");
        // Paths that only look a little like one are paths.
        for path in [
            "./a://b.db",
            "data/x://y",
            "odd:name.db",
            "/srv/sp.db",
            "C://sp/x.db",
        ] {
            let r = resolve(None, &[("SCRATCHPAD_DB_PATH", path)]).unwrap();
            assert_eq!(r.settings.db, PathBuf::from(path));
        }
    }

    #[test]
    fn bad_values_name_the_rule_and_the_value() {
        let e = resolve(Some("[limits]\nversions_kept = 0\n"), &[]).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("versions_kept = 0 is out of range: it must be 1 to 1000"),
            "{e}"
        );
        for rate in ["0.0", "-1.0", "nan", "inf", "0.0009", "1000001.0"] {
            let e = resolve(Some(&format!("[http]\ncalls_per_second = {rate}\n")), &[])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("http.calls_per_second = ")
                    && e.ends_with("is out of range: it must be 0.001 to 1000000"),
                "{rate}: {e}"
            );
        }
        let key = |agent: &str| {
            format!(
                "[[http.keys]]\nname = \"ci\"\nsha256 = \"{}\"\nagents = [\"a\", \"{agent}\"]\nscope = \"read-write\"\n",
                "0".repeat(64)
            )
        };
        assert!(resolve(Some(&key("b-2_c")), &[]).is_ok());
        let e = resolve(Some(&key("a b")), &[]).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "key \"ci\" is for an agent no call can name: agent_id may contain only [a-zA-Z0-9_-] (got \"a b\": ' ' at character 2)"
            ),
            "{e}"
        );
        for rate in ["0.001", "5.0", "1000000.0"] {
            assert!(resolve(Some(&format!("[http]\ncalls_per_second = {rate}\n")), &[]).is_ok());
        }
        for per_day in [0, 1_000_001] {
            let e = resolve(
                Some(&format!("[http]\nsummaries_per_day = {per_day}\n")),
                &[],
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.ends_with(&format!(
                    "http.summaries_per_day = {per_day} is out of range: it must be 1 to 1000000"
                )),
                "{e}"
            );
        }
        for (i, bound) in HTTP_BOUNDS.iter().enumerate() {
            for out in [bound.range.start() - 1, bound.range.end() + 1] {
                let e = resolve(Some(&format!("[http]\n{} = {out}\n", bound.name)), &[])
                    .unwrap_err()
                    .to_string();
                assert!(
                    e.ends_with(&format!(
                        "http.{} = {out} is out of range: it must be {} to {}",
                        bound.name,
                        bound.range.start(),
                        bound.range.end()
                    )),
                    "{e}"
                );
            }
            let within = format!("[http]\n{} = {}\n", bound.name, bound.range.end());
            let http = resolve(Some(&within), &[]).unwrap().settings.http;
            assert_eq!(http.bounds()[i], *bound.range.end(), "{within}");
            assert_eq!(HttpSettings::default().bounds()[i], bound.default);
        }
        let e = resolve(Some("[limits]\nmax_flies = 3\n"), &[]).unwrap_err();
        assert!(e.to_string().contains("unknown limit \"max_flies\""), "{e}");
        let e = resolve(Some("[store]\npth = \"x\"\n"), &[]).unwrap_err();
        assert!(e.to_string().contains("unknown field `pth`"), "{e}");
        assert!(e.to_string().contains("(line 2, column 1)"), "{e}");
        // A value of the wrong kind is named by its key, in words and not serde's types.
        for (file, said) in [
            (
                "[limits]\nmax_files = -1\n",
                "limits.max_files must be a whole number from 0 to 18446744073709551615 (got integer `-1`) (line 2, column 13)",
            ),
            (
                "[http]\nmax_connections = \"9\"\n",
                "http.max_connections must be a whole number from 0 to 4294967295 (got string \"9\") (line 2, column 19)",
            ),
            (
                "store = 5\n",
                "store must be a table (got integer `5`) (line 1, column 9)",
            ),
        ] {
            let e = resolve(Some(file), &[]).unwrap_err().to_string();
            assert!(e.ends_with(said), "{e}");
        }
        let e = resolve(None, &[("SCRATCHPAD_MAX_FILES", "lots")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "$SCRATCHPAD_MAX_FILES: \"lots\" is not a whole number"
        );
    }

    #[test]
    fn the_key_is_never_printed() {
        let r = resolve(None, &[("ANTHROPIC_API_KEY", "sk-ant-secret")]).unwrap();
        let shown = r.to_toml();
        assert!(!shown.contains("sk-ant-secret"));
        assert!(shown.contains("ANTHROPIC_API_KEY: set"));
    }

    #[test]
    fn a_named_config_file_must_exist() {
        let flags = Flags {
            config: Some("/nonexistent/scratchpad.toml".into()),
            ..Flags::default()
        };
        let e = Settings::resolve_with(flags, &|_| None, None, None, None).unwrap_err();
        assert!(matches!(e, SettingsError::Unreadable { .. }), "{e}");
    }
}
