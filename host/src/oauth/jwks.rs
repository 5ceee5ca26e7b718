//! Each authorization server's signing keys: its metadata found by RFC 8414 discovery (or
//! OpenID Connect's, for providers that publish only that), its JWKS fetched from the
//! `jwks_uri` there and kept. A token naming a key id the cache lacks fetches the set again
//! (the issuer rotated its keys), but never sooner than the floor after the last fetch: a
//! flood of tokens with made-up key ids costs the issuer one request a floor, not one each.

use super::url;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// How long a fetched key set is trusted before it is fetched again anyway, so a key the
/// issuer withdrew stops working within this long even if no token names an unknown one
/// (when the issuer can be reached: else the keys known stay in force).
pub const MAX_AGE: Duration = Duration::from_secs(3_600);

/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest metadata or key set read.
const MAX_DOCUMENT: usize = 1 << 20;

/// Why an issuer's keys could not be had.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    /// Discovery or the key set failed; says which URL and why.
    #[error("the keys of {issuer} cannot be fetched: {reason}")]
    Fetch {
        /// The issuer.
        issuer: String,
        /// Why.
        reason: String,
    },
    /// The set, fetched now or within the floor, has no such key.
    #[error("the key is not among {issuer}'s keys")]
    Unknown {
        /// The issuer.
        issuer: String,
    },
}

/// One issuer's keys, fetched when first needed.
#[derive(Debug)]
pub struct IssuerKeys {
    /// The issuer URL as configured, which the metadata must repeat.
    issuer: String,
    /// The least time between two fetches, so unknown `kid`s cannot make us hammer the issuer.
    floor: Duration,
    /// One client for every fetch (no redirects, a timeout).
    client: reqwest::Client,
    /// The keys last fetched and when; shared by every request checking a token.
    state: Mutex<Fetched>,
}

#[derive(Debug, Default)]
struct Fetched {
    /// Found by discovery once; the issuer's metadata is not read again.
    jwks_uri: Option<String>,
    /// The last key set fetched.
    keys: Option<JwkSet>,
    /// When the last fetch was tried, whether or not it worked: the floor counts from it.
    at: Option<Instant>,
}

impl IssuerKeys {
    /// The keys of `issuer`, fetched at most once per `floor` however many tokens ask.
    pub fn new(issuer: String, floor: Duration, client: reqwest::Client) -> Self {
        Self {
            issuer,
            floor,
            client,
            state: Mutex::new(Fetched::default()),
        }
    }

    /// The issuer.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The key a token's header names (`kid`; with none, the set's only key), fetching the
    /// set first if it is unknown, older than [`MAX_AGE`], or lacks that key and the floor
    /// has passed.
    pub async fn key(&self, kid: Option<&str>) -> Result<Jwk, JwksError> {
        let mut state = self.state.lock().await;
        let stale = state.at.is_none_or(|at| at.elapsed() >= MAX_AGE);
        if !stale && let Some(key) = state.keys.as_ref().and_then(|set| pick(set, kid)) {
            return Ok(key);
        }
        let may_fetch = state.at.is_none_or(|at| at.elapsed() >= self.floor);
        if may_fetch {
            let fetched = self.fetch(&mut state).await;
            state.at = Some(Instant::now());
            match fetched {
                Ok(set) => state.keys = Some(set),
                Err(e) if state.keys.is_none() => return Err(e),
                // An issuer that cannot be reached for a while leaves its known keys in force
                // (they are tried again after the floor), rather than refusing every token.
                Err(e) => tracing::warn!(error = %e, "keys not fetched again; those known stay"),
            }
        }
        state
            .keys
            .as_ref()
            .and_then(|set| pick(set, kid))
            .ok_or_else(|| JwksError::Unknown {
                issuer: self.issuer.clone(),
            })
    }

    async fn fetch(&self, state: &mut Fetched) -> Result<JwkSet, JwksError> {
        let uri = match &state.jwks_uri {
            Some(uri) => uri.clone(),
            None => state.jwks_uri.insert(self.discover().await?).clone(),
        };
        self.get_json(&uri).await.map_err(|why| self.failed(why))
    }

    /// A fetch of this issuer's that failed for `reason`.
    fn failed(&self, reason: String) -> JwksError {
        JwksError::Fetch {
            issuer: self.issuer.clone(),
            reason,
        }
    }

    /// The `jwks_uri` of the issuer's metadata: RFC 8414's location first (the well-known
    /// path before the issuer's path), then OpenID Connect's (after it). The metadata must
    /// name this issuer, else it is another server's.
    async fn discover(&self) -> Result<String, JwksError> {
        let fail = |reason: String| self.failed(reason);
        let parts = url(&self.issuer).map_err(|why| fail(why.into()))?;
        let places = [
            format!(
                "{}/.well-known/oauth-authorization-server{}",
                parts.origin, parts.path
            ),
            format!(
                "{}/.well-known/openid-configuration",
                self.issuer.trim_end_matches('/')
            ),
        ];
        let mut reasons = Vec::new();
        for place in places {
            match self.get_json::<serde_json::Value>(&place).await {
                Ok(meta) => {
                    let named = meta.get("issuer").and_then(|v| v.as_str());
                    if named != Some(self.issuer.as_str()) {
                        return Err(fail(format!(
                            "its metadata at {place} names issuer {named:?}, not this one"
                        )));
                    }
                    let jwks = meta
                        .get("jwks_uri")
                        .and_then(|v| v.as_str())
                        .ok_or_else(|| fail(format!("its metadata at {place} has no jwks_uri")))?;
                    url(jwks).map_err(|why| fail(format!("jwks_uri {jwks:?}: {why}")))?;
                    return Ok(jwks.to_owned());
                }
                Err(reason) => reasons.push(reason),
            }
        }
        Err(fail(reasons.join("; ")))
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, at: &str) -> Result<T, String> {
        let response = self
            .client
            .get(at)
            .header("accept", "application/json")
            .timeout(FETCH_TIMEOUT)
            .send()
            .await
            .map_err(|e| format!("{at}: {}", without_url(&e)))?;
        if !response.status().is_success() {
            return Err(format!("{at} answered {}", response.status()));
        }
        if response.content_length().unwrap_or(0) > MAX_DOCUMENT as u64 {
            return Err(format!("{at}: the document is over 1 MiB"));
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("{at}: {}", without_url(&e)))?;
        if body.len() > MAX_DOCUMENT {
            return Err(format!("{at}: the document is over 1 MiB"));
        }
        serde_json::from_slice(&body).map_err(|e| format!("{at}: not the JSON expected: {e}"))
    }
}

/// A reqwest error's reason, without the URL it repeats.
fn without_url(e: &reqwest::Error) -> String {
    let mut reason = e.to_string();
    if let Some(url) = e.url() {
        reason = reason.replace(&format!(" ({url})"), "");
    }
    reason
}

/// The key named `kid`, or the only key when the token names none.
fn pick(set: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None if set.keys.len() == 1 => set.keys.first().cloned(),
        None => None,
    }
}

/// The client the key fetches share: rustls with the system's roots.
pub fn client() -> Result<reqwest::Client, String> {
    // Any provider installed first (by another part of the process) is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
}
