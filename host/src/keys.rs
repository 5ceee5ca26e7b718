//! API keys for hosted mode: each bound to one or more agent ids and a scope.
//!
//! Only a key's SHA-256 is kept (in the config file's `[[http.keys]]`); the key itself is
//! shown once, when `scratchpad-mcp keys add` makes it. A request's identity is the key's,
//! never the `agent_id` it names: a call for another agent, a write with a read-only key, or
//! a summary (which spends the operator's model budget) with a key not allowed summaries, is
//! refused before any storage work. No key, and no hash, ever reaches a log or an error.
//! A running server reads its keys again on `SIGHUP` ([`KeyRing`]).

use scratchpad_guest::names::AgentId;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

/// What a key may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Only the tools that change nothing.
    ReadOnly,
    /// Every tool.
    ReadWrite,
}

impl Scope {
    /// Whether a key of this scope may ask for summaries unless its entry says otherwise:
    /// a read-write key may, a read-only one may not (it could otherwise spend the
    /// operator's model budget with nothing but read access).
    pub fn summaries_by_default(self) -> bool {
        self == Scope::ReadWrite
    }

    /// The name the config file and `keys list` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::ReadOnly => "read-only",
            Scope::ReadWrite => "read-write",
        }
    }
}

/// A key as the config file holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyEntry {
    /// A name to list and revoke it by.
    pub name: String,
    /// SHA-256 of the key, hex.
    pub sha256: String,
    /// The agent ids it may act as.
    pub agents: Vec<String>,
    /// What it may do.
    pub scope: Scope,
    /// Whether it may call `summarize_file`; unset: as its scope says
    /// ([`Scope::summaries_by_default`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summaries: Option<bool>,
}

impl KeyEntry {
    /// Whether this key may ask for summaries.
    pub fn may_summarise(&self) -> bool {
        self.summaries
            .unwrap_or_else(|| self.scope.summaries_by_default())
    }
}

/// What a call does, as far as a key is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads the agent's data.
    Read,
    /// Changes the agent's data.
    Write,
    /// Asks the operator's model, which costs money (a summary).
    Model,
}

/// What a caller proved who it is with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Credential {
    /// One of the configured API keys.
    Key,
    /// An OAuth access token from a configured authorization server ([`crate::oauth`]).
    Token,
}

impl Credential {
    /// The word messages use for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Credential::Key => "key",
            Credential::Token => "token",
        }
    }
}

/// Who a request is, by its key or its token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// What it was proved with.
    pub credential: Credential,
    /// The key's name, or the token's subject (for logs and messages; never the secret).
    pub name: String,
    /// The agent ids it may act as.
    pub agents: Vec<String>,
    /// What it may do.
    pub scope: Scope,
    /// Whether it may ask for summaries.
    pub summaries: bool,
    /// Whether it may read: a key always; a token with the read or the write scope.
    pub reads: bool,
}

impl Identity {
    /// Whether this identity may make a call of kind `access` for `agent`; the refusal says
    /// which rule and names the agents the key or token is for (never the secret).
    pub fn allows(&self, agent: &str, access: Access) -> Result<(), String> {
        let this = format!("this {} ({:?})", self.credential.as_str(), self.name);
        if !self.agents.iter().any(|a| a == agent) {
            let agents = if self.agents.is_empty() {
                "no agent".to_owned()
            } else {
                format!("agent {}", self.agents.join(", "))
            };
            return Err(format!(
                "{this} acts for {agents}; it cannot act for agent {agent:?}"
            ));
        }
        if self.may(access) {
            return Ok(());
        }
        Err(match access {
            Access::Read => format!("{this} may not read: it has no read scope"),
            Access::Write => format!("{this} is read-only; the tool changes data"),
            Access::Model => {
                let remedy = match self.credential {
                    Credential::Key => "ask for a key made with `keys add --summaries`",
                    Credential::Token => "ask for a token with the summaries scope",
                };
                format!(
                    "{this} may not ask for summaries, which spend the operator's model budget; {remedy}"
                )
            }
        })
    }

    /// Whether it may make calls of kind `access` at all, whichever agent they are for.
    pub fn may(&self, access: Access) -> bool {
        match access {
            Access::Read => self.reads,
            Access::Write => self.scope == Scope::ReadWrite,
            Access::Model => self.summaries,
        }
    }

    /// The caller its calls in flight are counted as, for messages too (`key "ci"`): a key
    /// and a token subject of the same name are two callers.
    pub fn caller(&self) -> String {
        format!("{} {:?}", self.credential.as_str(), self.name)
    }
}

/// The configured keys, by hash.
#[derive(Clone, Debug, Default)]
pub struct Keys(HashMap<String, Identity>);

/// SHA-256 of a key, hex.
pub fn hash(key: &str) -> String {
    scratchpad_guest::hex::hex(&Sha256::digest(key.as_bytes()))
}

impl Keys {
    /// The keys of a config.
    pub fn new(entries: &[KeyEntry]) -> Self {
        Self(
            entries
                .iter()
                .map(|e| {
                    let identity = Identity {
                        credential: Credential::Key,
                        name: e.name.clone(),
                        agents: e.agents.clone(),
                        scope: e.scope,
                        summaries: e.may_summarise(),
                        reads: true,
                    };
                    (e.sha256.to_ascii_lowercase(), identity)
                })
                .collect(),
        )
    }

    /// Whether no key is configured.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The identity of a bearer key, if it is one of ours.
    pub fn identify(&self, key: &str) -> Option<&Identity> {
        self.0.get(&hash(key))
    }
}

/// The keys in force while serving: replaced whole when the config file is read again
/// (on `SIGHUP`), so a revoked key stops working without a restart.
#[derive(Debug, Default)]
pub struct KeyRing(RwLock<Arc<Keys>>);

impl KeyRing {
    /// A ring holding `keys`.
    pub fn new(keys: Keys) -> Self {
        Self(RwLock::new(Arc::new(keys)))
    }

    fn current(&self) -> Arc<Keys> {
        Arc::clone(&self.0.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The identity of a bearer key, if it is one of the keys in force.
    pub fn identify(&self, key: &str) -> Option<Identity> {
        self.current().identify(key).cloned()
    }

    /// Puts `keys` in force, for every request from now on.
    pub fn replace(&self, keys: Keys) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(keys);
    }

    /// How many keys are in force.
    pub fn len(&self) -> usize {
        self.current().0.len()
    }

    /// Whether no key is in force.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The keys recorded in the config file at `path` (none when it has none).
pub fn read(path: &Path) -> Result<Vec<KeyEntry>, KeysError> {
    let invalid = |reason: String| KeysError::Invalid {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| KeysError::Io(format!("cannot read {}: {e}", path.display())))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| invalid(e.message().to_owned()))?;
    match table.get("http").and_then(|h| h.get("keys")) {
        None => Ok(Vec::new()),
        Some(keys) => keys
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| invalid(format!("[[http.keys]]: {}", e.message()))),
    }
}

/// Why the keys in a config file could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The file could not be read or written.
    #[error("{0}")]
    Io(String),
    /// The file is not TOML of the expected shape.
    #[error("config file {path}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A name is taken, unknown or unusable, or an agent list is empty.
    #[error("{0}")]
    Refused(String),
}

fn load(path: &Path) -> Result<toml_edit::DocumentMut, KeysError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(KeysError::Io(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    text.parse()
        .map_err(|e: toml_edit::TomlError| KeysError::Invalid {
            path: path.display().to_string(),
            reason: e.message().to_owned(),
        })
}

fn save(path: &Path, doc: &toml_edit::DocumentMut) -> Result<(), KeysError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::private::create_dir_all(dir)
            .map_err(|e| KeysError::Io(format!("cannot create {}: {e}", dir.display())))?;
    }
    // The file holds the keys' hashes: written private, whatever mode it had.
    let partial = path.with_extension("toml.partial");
    crate::private::write(&partial, doc.to_string())
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| KeysError::Io(format!("cannot write {}: {e}", path.display())))
}

fn keys_array(
    doc: &mut toml_edit::DocumentMut,
) -> Result<&mut toml_edit::ArrayOfTables, KeysError> {
    let http = doc
        .entry("http")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_mut()
        .ok_or_else(|| KeysError::Refused("[http] in the config file is not a table".into()))?;
    http.entry("keys")
        .or_insert_with(|| toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()))
        .as_array_of_tables_mut()
        .ok_or_else(|| {
            KeysError::Refused("http.keys in the config file is not [[http.keys]]".into())
        })
}

fn name_of(table: &toml_edit::Table) -> Option<&str> {
    table.get("name").and_then(|n| n.as_str())
}

/// That each of the agents key `name` is for is an agent id a call can name: a key for
/// another would be refused at every call, for a reason its operator never sees.
pub fn check_agents(name: &str, agents: &[String]) -> Result<(), String> {
    for agent in agents {
        AgentId::parse(agent).map_err(|e| {
            format!(
                "key {name:?} is for an agent no call can name: {}",
                scratchpad_guest::json::message(&e)
            )
        })?;
    }
    Ok(())
}

/// Makes a key for `agents` with `scope` (and `summaries` if given, else as the scope says),
/// records its hash under `name` in the config file at `path` (created if missing, comments
/// kept), and returns the key: the only time it is shown.
pub fn add(
    path: &Path,
    name: &str,
    agents: &[String],
    scope: Scope,
    summaries: Option<bool>,
) -> Result<String, KeysError> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(KeysError::Refused(format!(
            "a key's name is one or more of [a-zA-Z0-9_.-] (got {name:?})"
        )));
    }
    if agents.is_empty() {
        return Err(KeysError::Refused(
            "a key needs at least one --agent".into(),
        ));
    }
    check_agents(name, agents).map_err(KeysError::Refused)?;
    let mut doc = load(path)?;
    let keys = keys_array(&mut doc)?;
    if keys.iter().any(|t| name_of(t) == Some(name)) {
        return Err(KeysError::Refused(format!(
            "a key named {name:?} exists; revoke it first or pick another name"
        )));
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| KeysError::Io(format!("no randomness: {e}")))?;
    let key = format!("sk-scratchpad-{}", scratchpad_guest::hex::hex(&bytes));
    let mut table = toml_edit::Table::new();
    table["name"] = toml_edit::value(name);
    table["sha256"] = toml_edit::value(hash(&key));
    let mut list = toml_edit::Array::new();
    agents.iter().for_each(|a| list.push(a.as_str()));
    table["agents"] = toml_edit::value(list);
    table["scope"] = toml_edit::value(scope.as_str());
    if let Some(summaries) = summaries {
        table["summaries"] = toml_edit::value(summaries);
    }
    keys.push(table);
    save(path, &doc)?;
    Ok(key)
}

/// Removes the key named `name` from the config file; servers refuse it once they read the
/// file again (`SIGHUP`, or a restart).
pub fn revoke(path: &Path, name: &str) -> Result<(), KeysError> {
    let mut doc = load(path)?;
    let keys = keys_array(&mut doc)?;
    let before = keys.len();
    keys.retain(|t| name_of(t) != Some(name));
    if keys.len() == before {
        return Err(KeysError::Refused(format!("no key is named {name:?}")));
    }
    save(path, &doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_kept_hashed_and_identify_their_agents() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "# my settings\n[limits]\nmax_files = 5\n").unwrap();
        let key = add(
            &path,
            "ci",
            &["a".into(), "b".into()],
            Scope::ReadOnly,
            None,
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains(&key) && text.contains(&hash(&key)) && text.starts_with("# my settings")
        );
        assert_eq!(
            add(&path, "ci", &["a".into()], Scope::ReadWrite, None)
                .unwrap_err()
                .to_string(),
            "a key named \"ci\" exists; revoke it first or pick another name"
        );
        let entries: toml::Table = toml::from_str(&text).unwrap();
        let parsed: Vec<KeyEntry> = entries["http"]["keys"].clone().try_into().unwrap();
        let keys = Keys::new(&parsed);
        let who = keys.identify(&key).unwrap();
        assert_eq!(who.allows("b", Access::Read), Ok(()));
        assert!(
            who.allows("c", Access::Read)
                .unwrap_err()
                .contains("cannot act for agent \"c\"")
        );
        assert!(
            who.allows("a", Access::Write)
                .unwrap_err()
                .contains("read-only")
        );
        assert_eq!(
            who.allows("a", Access::Model).unwrap_err(),
            "this key (\"ci\") may not ask for summaries, which spend the operator's model budget; ask for a key made with `keys add --summaries`"
        );
        assert!(keys.identify("sk-scratchpad-nope").is_none());
        let ring = KeyRing::new(Keys::new(&read(&path).unwrap()));
        assert_eq!(ring.identify(&key).map(|who| who.name), Some("ci".into()));
        revoke(&path, "ci").unwrap();
        assert!(revoke(&path, "ci").is_err());
        ring.replace(Keys::new(&read(&path).unwrap()));
        assert!(ring.is_empty() && ring.identify(&key).is_none());
    }

    /// Read-write keys may ask for summaries and read-only ones may not, unless the entry
    /// says otherwise either way.
    #[test]
    fn summaries_follow_the_scope_unless_the_key_says() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let agents = ["a".to_owned()];
        let cases = [
            ("rw", Scope::ReadWrite, None, true),
            ("ro", Scope::ReadOnly, None, false),
            ("ro-sum", Scope::ReadOnly, Some(true), true),
            ("rw-no", Scope::ReadWrite, Some(false), false),
        ];
        let made: Vec<(String, bool)> = cases
            .iter()
            .map(|(name, scope, summaries, may)| {
                (add(&path, name, &agents, *scope, *summaries).unwrap(), *may)
            })
            .collect();
        let bad = add(
            &path,
            "bad",
            &["a".into(), "../b".into()],
            Scope::ReadWrite,
            None,
        );
        assert_eq!(
            bad.unwrap_err().to_string(),
            "key \"bad\" is for an agent no call can name: agent_id may contain only [a-zA-Z0-9_-] (got \"../b\": '.' at character 1)"
        );
        for name in ["", "k 2"] {
            assert_eq!(
                add(&path, name, &agents, Scope::ReadWrite, None)
                    .unwrap_err()
                    .to_string(),
                format!("a key's name is one or more of [a-zA-Z0-9_.-] (got {name:?})")
            );
        }
        let keys = Keys::new(&read(&path).unwrap());
        assert_eq!(keys.0.len(), 4, "the refused keys were not added");
        for (key, may) in made {
            let who = keys.identify(&key).unwrap();
            assert_eq!(who.allows("a", Access::Model).is_ok(), may, "{}", who.name);
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.matches("summaries = ").count(),
            2,
            "only where given: {text}"
        );
    }
}
