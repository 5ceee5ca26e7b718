//! A bearer token checked and turned into an [`Identity`]: a JWT (RFC 9068 access tokens,
//! or any signed JWT the issuer mints for this audience) whose signature one of its
//! issuer's keys verifies with an allowed algorithm, whose `iss` is a configured
//! authorization server, whose `aud` is this server's resource URI (a token minted for
//! another service is refused, RFC 8707), and whose `exp` and `nbf` hold with a small
//! leeway. Its scopes decide what it may do, its claims which agents it acts for.

use super::jwks::{IssuerKeys, JwksError};
use super::{OAuthSettings, Scopes};
use crate::keys::{Credential, Identity, Scope};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

/// Why a token is refused; each says which rule, never the token.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a JWT this server can read.
    #[error("the token is not a signed JWT this server can read")]
    Malformed,
    /// Signed with an algorithm the operator does not allow.
    #[error("the token is signed with {0}, which this server does not accept")]
    Algorithm(String),
    /// From an issuer that is not configured.
    #[error("the token's issuer is not one this server trusts")]
    Issuer,
    /// No key of the issuer's has the token's key id.
    #[error("the token's signing key is not among its issuer's keys")]
    UnknownKey,
    /// The issuer's keys could not be fetched.
    #[error("the token's issuer cannot be reached to check it; retry later")]
    Unreachable,
    /// The signature does not verify.
    #[error("the token's signature does not verify")]
    Signature,
    /// Minted for another audience.
    #[error("the token is for another audience; it must be minted for {0}")]
    Audience(String),
    /// Past its `exp`.
    #[error("the token has expired")]
    Expired,
    /// Before its `nbf`.
    #[error("the token is not valid yet")]
    NotYet,
    /// Lacking a claim every token needs.
    #[error("the token lacks a claim it needs ({0})")]
    Claim(&'static str),
}

/// Checks tokens against the configured authorization servers.
#[derive(Debug)]
pub struct Verifier {
    /// The operator's `[http.oauth]`: audience, algorithms, claims, grants, scopes.
    settings: OAuthSettings,
    /// Each configured issuer's keys, cached.
    issuers: Vec<IssuerKeys>,
}

impl Verifier {
    /// A verifier for checked `settings`.
    pub fn new(settings: OAuthSettings) -> Result<Self, String> {
        let client = super::jwks::client()?;
        let floor = settings.jwks_refresh_floor();
        let issuers = settings
            .authorization_servers
            .iter()
            .map(|issuer| IssuerKeys::new(issuer.clone(), floor, client.clone()))
            .collect();
        Ok(Self { settings, issuers })
    }

    /// The settings it checks against.
    pub fn settings(&self) -> &OAuthSettings {
        &self.settings
    }

    /// Who a token is, or why it is refused.
    pub async fn identify(&self, token: &str) -> Result<Identity, TokenError> {
        // The algorithm is judged by its name before anything is parsed as a key: `none` and
        // HS* are refused here, whatever the key set holds.
        let mut parts = token.split('.').map(decode_part);
        let (Some(Some(header)), Some(Some(claimed))) = (parts.next(), parts.next()) else {
            return Err(TokenError::Malformed);
        };
        let text = |map: &Map<String, Value>, name: &str| {
            map.get(name).and_then(Value::as_str).map(str::to_owned)
        };
        let alg_name = text(&header, "alg").ok_or(TokenError::Malformed)?;
        if !self.settings.algorithms().contains(&alg_name.as_str()) {
            let shown = alg_name
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .take(16)
                .collect();
            return Err(TokenError::Algorithm(shown));
        }
        let alg: Algorithm = alg_name.parse().map_err(|_| TokenError::Malformed)?;
        // The claimed issuer only picks the keys to check with; the validation checks it again.
        let issuer = text(&claimed, "iss").ok_or(TokenError::Claim("iss"))?;
        let keys = self
            .issuers
            .iter()
            .find(|i| i.issuer() == issuer)
            .ok_or(TokenError::Issuer)?;
        let jwk = keys
            .key(text(&header, "kid").as_deref())
            .await
            .map_err(|e| match e {
                JwksError::Unknown { .. } => TokenError::UnknownKey,
                JwksError::Fetch { .. } => {
                    tracing::warn!(error = %e, "a token could not be checked");
                    TokenError::Unreachable
                }
            })?;
        if let Some(key_alg) = jwk.common.key_algorithm
            && format!("{key_alg:?}") != alg_name
        {
            return Err(TokenError::Signature);
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| TokenError::UnknownKey)?;
        let mut validation = Validation::new(alg);
        validation.set_issuer(&[keys.issuer()]);
        validation.set_audience(&[&self.settings.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.settings.leeway_seconds();
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| match e.kind() {
                ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm => TokenError::Signature,
                ErrorKind::InvalidAudience => TokenError::Audience(self.settings.resource.clone()),
                ErrorKind::InvalidIssuer => TokenError::Issuer,
                ErrorKind::ExpiredSignature => TokenError::Expired,
                ErrorKind::ImmatureSignature => TokenError::NotYet,
                ErrorKind::MissingRequiredClaim(c) if c == "exp" => TokenError::Claim("exp"),
                ErrorKind::MissingRequiredClaim(c) if c == "aud" => TokenError::Claim("aud"),
                ErrorKind::MissingRequiredClaim(c) if c == "sub" => TokenError::Claim("sub"),
                _ => TokenError::Malformed,
            })?
            .claims;
        Ok(identity(&self.settings, &claims))
    }
}

/// One base64url part of a JWT, as a JSON object.
fn decode_part(part: &str) -> Option<Map<String, Value>> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The identity a verified token's claims give: its subject, its agents (the agent claim's
/// value, and the grants of its subject and groups), and what its scopes allow.
pub fn identity(settings: &OAuthSettings, claims: &Map<String, Value>) -> Identity {
    let strings = |name: &str| -> Vec<String> {
        match claims.get(name) {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    };
    let subject = claims
        .get("sub")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let groups = settings
        .groups_claim
        .as_deref()
        .map(strings)
        .unwrap_or_default();
    let mut agents = settings
        .agent_claim
        .as_deref()
        .map(strings)
        .unwrap_or_default();
    for grant in &settings.grants {
        let matches = grant.subject.as_deref() == Some(subject.as_str())
            || grant.group.as_ref().is_some_and(|g| groups.contains(g));
        if matches {
            agents.extend(grant.agents.iter().cloned());
        }
    }
    let mut seen = std::collections::HashSet::new();
    agents.retain(|a| seen.insert(a.clone()));
    let granted = scopes(claims);
    let Scopes {
        read,
        write,
        summaries,
    } = settings.scopes();
    let has = |s: &str| granted.iter().any(|g| g == s);
    Identity {
        credential: Credential::Token,
        name: subject,
        agents,
        scope: if has(write) {
            Scope::ReadWrite
        } else {
            Scope::ReadOnly
        },
        summaries: has(summaries),
        reads: has(read) || has(write),
    }
}

/// A token's scopes: RFC 9068's space-separated `scope`, or the `scp` array some providers
/// (Entra ID, Okta) use.
fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => s.split_whitespace().map(str::to_owned).collect(),
        (_, Some(Value::Array(items))) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        (_, Some(Value::String(s))) => s.split_whitespace().map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Access;
    use crate::oauth::Grant;
    use serde_json::json;

    #[test]
    fn claims_name_the_agents_and_scopes_decide_what_a_token_may_do() {
        let settings = OAuthSettings {
            agent_claim: Some("agent".into()),
            groups_claim: Some("groups".into()),
            grants: vec![
                Grant {
                    subject: Some("alice".into()),
                    group: None,
                    agents: vec!["notes".into()],
                },
                Grant {
                    subject: None,
                    group: Some("eng".into()),
                    agents: vec!["shared".into(), "notes".into()],
                },
            ],
            ..crate::oauth::example()
        };
        let claims = |v: Value| v.as_object().unwrap().clone();
        let who = identity(
            &settings,
            &claims(json!({
                "sub": "alice", "agent": "alice-bot", "groups": ["eng"], "scope": "openid scratchpad:read"
            })),
        );
        assert_eq!(who.agents, ["alice-bot", "notes", "shared"]);
        assert_eq!(who.allows("shared", Access::Read), Ok(()));
        assert_eq!(
            who.allows("alice-bot", Access::Write).unwrap_err(),
            "this token (\"alice\") is read-only; the tool changes data"
        );
        assert_eq!(
            who.allows("bob", Access::Read).unwrap_err(),
            "this token (\"alice\") acts for agent alice-bot, notes, shared; it cannot act for agent \"bob\""
        );
        let writer = identity(
            &settings,
            &claims(json!({"sub": "bob", "scp": ["scratchpad:write"]})),
        );
        assert_eq!(
            (
                writer.agents.len(),
                writer.scope,
                writer.summaries,
                writer.reads
            ),
            (0, Scope::ReadWrite, false, true)
        );
        assert!(
            writer
                .allows("x", Access::Read)
                .unwrap_err()
                .contains("acts for no agent")
        );
        let nothing = identity(
            &settings,
            &claims(json!({"sub": "eve", "agent": ["e"], "scope": "openid"})),
        );
        assert!(!nothing.reads && nothing.scope == Scope::ReadOnly && !nothing.summaries);
    }

    #[test]
    fn parts_decode_from_unpadded_base64url() {
        assert_eq!(decode_part("eyJhbGciOiJub25lIn0").unwrap()["alg"], "none");
        assert!(decode_part("not base64!").is_none());
    }
}
