//! Hosted mode as an OAuth 2.1 resource server, as the MCP authorization spec has it: beside
//! the API keys, a bearer token minted by one of the operator's authorization servers
//! (Keycloak, Auth0, Entra ID, …) for this server is a caller's identity.
//!
//! - [`metadata`]: the protected-resource metadata (RFC 9728) that clients discover from a
//!   401's `WWW-Authenticate`, naming the authorization servers and the scopes.
//! - [`jwks`]: each authorization server's signing keys, found by RFC 8414 / OpenID
//!   discovery, cached, fetched again for an unknown key id at most once per floor.
//! - [`token`]: a token checked (signature, algorithm, issuer, audience, times) and turned
//!   into an [`Identity`] exactly as strict as a key's: its agents, read-only or read-write,
//!   summaries or not, by scope.
//!
//! The configuration (`[http.oauth]`) holds no secret: a resource server needs none to check
//! signed tokens. No token reaches a log or an error.

pub mod jwks;
pub mod metadata;
pub mod token;

use crate::keys::Access;
use serde::{Deserialize, Serialize};

/// The scope names unless configured: reading, writing (which includes reading) and asking
/// for summaries (which spend the operator's model budget).
pub const DEFAULT_SCOPES: Scopes = Scopes {
    read: "scratchpad:read",
    write: "scratchpad:write",
    summaries: "scratchpad:summaries",
};

/// The signing algorithms accepted unless configured.
pub const DEFAULT_ALGORITHMS: [&str; 2] = ["RS256", "ES256"];

/// Seconds of clock difference allowed on `exp` and `nbf` unless configured.
pub const DEFAULT_LEEWAY_SECONDS: u32 = 30;

/// The least seconds between two fetches of an issuer's keys unless configured.
pub const DEFAULT_JWKS_REFRESH_FLOOR_SECONDS: u32 = 60;

/// The algorithms an operator may allow: asymmetric ones only. `none` would accept anyone's
/// token, and an HS* algorithm with a public key as its secret anyone's forgery.
pub const ALLOWED_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// The scope names, by what they allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scopes<S = &'static str> {
    /// Calls that change nothing.
    pub read: S,
    /// Every call but summaries; includes `read`.
    pub write: S,
    /// `summarize_file`.
    pub summaries: S,
}

/// `[http.oauth]`: which authorization servers mint tokens for this server, and how a
/// token's claims name its agents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthSettings {
    /// This server's resource URI as clients reach it (`https://host/mcp`): the audience a
    /// token must be minted for (RFC 8707), and where the metadata says it is.
    pub resource: String,
    /// The issuer URLs of the authorization servers whose tokens are accepted.
    pub authorization_servers: Vec<String>,
    /// The signing algorithms accepted; unset: RS256 and ES256.
    #[serde(default)]
    pub algorithms: Option<Vec<String>>,
    /// The claim holding the agent id (a string) or ids (an array), such as `sub`.
    #[serde(default)]
    pub agent_claim: Option<String>,
    /// The claim listing a token's groups, for `[[http.oauth.grants]]` by group.
    #[serde(default)]
    pub groups_claim: Option<String>,
    /// Agents granted to a subject or to a group.
    #[serde(default)]
    pub grants: Vec<Grant>,
    /// The scope for reading; unset: `scratchpad:read`.
    #[serde(default)]
    pub read_scope: Option<String>,
    /// The scope for writing; unset: `scratchpad:write`.
    #[serde(default)]
    pub write_scope: Option<String>,
    /// The scope for summaries; unset: `scratchpad:summaries`.
    #[serde(default)]
    pub summaries_scope: Option<String>,
    /// Seconds of clock difference allowed on `exp` and `nbf`; unset: 30.
    #[serde(default)]
    pub leeway_seconds: Option<u32>,
    /// The least seconds between two fetches of an issuer's keys, however many tokens name a
    /// key it does not know; unset: 60.
    #[serde(default)]
    pub jwks_refresh_floor_seconds: Option<u32>,
}

/// Agents for the tokens of one subject or one group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    /// A token whose `sub` is this.
    #[serde(default)]
    pub subject: Option<String>,
    /// A token whose groups claim holds this.
    #[serde(default)]
    pub group: Option<String>,
    /// The agents it may act as.
    pub agents: Vec<String>,
}

/// Why `[http.oauth]` cannot be used.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("http.oauth: {0}")]
pub struct OAuthSettingsError(String);

impl OAuthSettings {
    /// The scope names in force.
    pub fn scopes(&self) -> Scopes<&str> {
        Scopes {
            read: self.read_scope.as_deref().unwrap_or(DEFAULT_SCOPES.read),
            write: self.write_scope.as_deref().unwrap_or(DEFAULT_SCOPES.write),
            summaries: self
                .summaries_scope
                .as_deref()
                .unwrap_or(DEFAULT_SCOPES.summaries),
        }
    }

    /// The scope a call of kind `access` needs.
    pub fn scope_for(&self, access: Access) -> &str {
        let scopes = self.scopes();
        match access {
            Access::Read => scopes.read,
            Access::Write => scopes.write,
            Access::Model => scopes.summaries,
        }
    }

    /// The clock difference allowed on `exp` and `nbf`, in seconds.
    pub fn leeway_seconds(&self) -> u64 {
        u64::from(self.leeway_seconds.unwrap_or(DEFAULT_LEEWAY_SECONDS))
    }

    /// The least time between two fetches of an issuer's keys.
    pub fn jwks_refresh_floor(&self) -> std::time::Duration {
        let seconds = self
            .jwks_refresh_floor_seconds
            .unwrap_or(DEFAULT_JWKS_REFRESH_FLOOR_SECONDS);
        std::time::Duration::from_secs(u64::from(seconds))
    }

    /// The algorithms in force.
    pub fn algorithms(&self) -> Vec<&str> {
        match &self.algorithms {
            Some(list) => list.iter().map(String::as_str).collect(),
            None => DEFAULT_ALGORITHMS.to_vec(),
        }
    }

    /// Refuses settings that could not be served safely, naming the setting and the value.
    pub fn check(&self) -> Result<(), OAuthSettingsError> {
        let refuse = |m: String| Err(OAuthSettingsError(m));
        let resource = url(&self.resource)
            .map_err(|why| OAuthSettingsError(format!("resource = {:?}: {why}", self.resource)))?;
        if resource.fragment.is_some() {
            return refuse(format!(
                "resource = {:?}: a resource URI has no fragment (RFC 8707)",
                self.resource
            ));
        }
        if self.authorization_servers.is_empty() {
            return refuse("authorization_servers: name at least one issuer URL".into());
        }
        for issuer in &self.authorization_servers {
            url(issuer).map_err(|why| {
                OAuthSettingsError(format!("authorization_servers: {issuer:?}: {why}"))
            })?;
        }
        let algorithms = self.algorithms();
        if algorithms.is_empty() {
            return refuse("algorithms: allow at least one".into());
        }
        if let Some(bad) = algorithms.iter().find(|a| !ALLOWED_ALGORITHMS.contains(a)) {
            return refuse(format!(
                "algorithms: {bad:?} is not allowed; the choice is {}",
                ALLOWED_ALGORITHMS.join(", ")
            ));
        }
        if self.agent_claim.is_none() && self.grants.is_empty() {
            return refuse(
                "name the claim holding a token's agent (agent_claim = \"sub\", say) or grant agents in [[http.oauth.grants]]"
                    .into(),
            );
        }
        for grant in &self.grants {
            if grant.subject.is_some() == grant.group.is_some() {
                return refuse("a grant names either a subject or a group".into());
            }
            if grant.agents.is_empty() {
                return refuse("a grant needs at least one agent".into());
            }
            if grant.group.is_some() && self.groups_claim.is_none() {
                return refuse(
                    "a grant by group needs groups_claim, the claim listing a token's groups"
                        .into(),
                );
            }
        }
        let scopes = self.scopes();
        if scopes.read == scopes.write
            || scopes.read == scopes.summaries
            || scopes.write == scopes.summaries
        {
            return refuse("read_scope, write_scope and summaries_scope must differ".into());
        }
        if let Some(leeway) = self.leeway_seconds
            && leeway > 300
        {
            return refuse(format!(
                "leeway_seconds = {leeway} is out of range: it must be 0 to 300"
            ));
        }
        if let Some(floor) = self.jwks_refresh_floor_seconds
            && !(1..=86_400).contains(&floor)
        {
            return refuse(format!(
                "jwks_refresh_floor_seconds = {floor} is out of range: it must be 1 to 86400"
            ));
        }
        Ok(())
    }
}

/// An absolute URL split where this module needs it.
#[derive(Debug, PartialEq, Eq)]
pub struct Url<'a> {
    /// `https://host:port`, no trailing slash.
    pub origin: &'a str,
    /// The path, empty or from its `/`, without query or fragment.
    pub path: &'a str,
    /// The fragment, if any.
    pub fragment: Option<&'a str>,
}

/// Splits an absolute `https` URL, or an `http` one on loopback (a development issuer): a
/// token's keys fetched over plain HTTP from elsewhere could be anyone's.
pub fn url(text: &str) -> Result<Url<'_>, &'static str> {
    let (scheme, rest) = text.split_once("://").ok_or("it must be an absolute URL")?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    if authority.is_empty() || authority.contains('@') {
        return Err("it must name a host, without user information");
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match scheme {
        "https" => {}
        "http" if loopback => {}
        "http" => return Err("it must be https (plain http only on loopback)"),
        _ => return Err("it must be an https URL"),
    }
    let origin = &text[..scheme.len() + 3 + authority_end];
    let tail = &rest[authority_end..];
    let (before_fragment, fragment) = match tail.split_once('#') {
        Some((before, fragment)) => (before, Some(fragment)),
        None => (tail, None),
    };
    let path = before_fragment.split('?').next().unwrap_or("");
    Ok(Url {
        origin,
        path: path.trim_end_matches('/'),
        fragment,
    })
}

/// Settings the unit tests start from: one issuer, the agent in `sub`.
#[cfg(test)]
pub(crate) fn example() -> OAuthSettings {
    OAuthSettings {
        resource: "https://pad.example.com/mcp".into(),
        authorization_servers: vec!["https://id.example.com".into()],
        agent_claim: Some("sub".into()),
        ..OAuthSettings::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_could_not_be_served_safely_are_refused_by_name() {
        assert_eq!(example().check(), Ok(()));
        let refused = |change: fn(&mut OAuthSettings)| {
            let mut s = example();
            change(&mut s);
            s.check().unwrap_err().to_string()
        };
        assert_eq!(
            refused(|s| s.algorithms = Some(vec!["HS256".into()])),
            "http.oauth: algorithms: \"HS256\" is not allowed; the choice is RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA"
        );
        assert!(
            refused(|s| s.algorithms = Some(vec!["none".into()]))
                .contains("\"none\" is not allowed")
        );
        assert_eq!(
            refused(|s| s.authorization_servers = vec!["http://id.example.com".into()]),
            "http.oauth: authorization_servers: \"http://id.example.com\": it must be https (plain http only on loopback)"
        );
        assert!(
            refused(|s| s.resource = "https://pad.example.com/mcp#x".into())
                .contains("no fragment")
        );
        assert!(refused(|s| s.agent_claim = None).contains("agent_claim"));
        assert!(
            refused(|s| s.write_scope = Some("scratchpad:read".into())).contains("must differ")
        );
        assert!(
            refused(|s| s.grants = vec![Grant {
                subject: None,
                group: Some("eng".into()),
                agents: vec!["a".into()]
            }])
            .contains("groups_claim")
        );
        assert!(refused(|s| s.jwks_refresh_floor_seconds = Some(0)).contains("1 to 86400"));
    }

    #[test]
    fn urls_split_at_origin_and_path_and_only_loopback_may_be_plain_http() {
        let u = url("https://pad.example.com:8443/team/mcp/?x=1").unwrap();
        assert_eq!(
            (u.origin, u.path),
            ("https://pad.example.com:8443", "/team/mcp")
        );
        assert_eq!(url("http://127.0.0.1:9/").unwrap().path, "");
        assert!(url("http://[::1]:9/mcp").is_ok());
        assert!(url("http://localhost.evil.example/").is_err());
        assert!(url("http://127.evil.example/").is_err());
        assert!(url("https://user@pad.example.com/").is_err());
        assert!(url("pad.example.com/mcp").is_err());
    }
}
