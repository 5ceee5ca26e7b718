//! The model behind `summarize_file`: Claude over the Anthropic Messages API.
//!
//! The guest decides when a summary is needed and writes the prompt; this module only makes
//! the HTTP call, and makes it well: the key is the caller's own and never leaves this module
//! except in the `x-api-key` header; rate limits and overload are retried with bounded,
//! jittered backoff that honours `retry-after`; and two calls that need the same summary at
//! the same time share one request.

use crate::bindings::{SummariserError, SummaryRequest};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The model used when none is configured: the current Claude Haiku.
pub const DEFAULT_MODEL: &str = "claude-haiku-5-5";

/// The API used when no base URL is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version this client speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Most attempts at one summary, the first included.
pub const MAX_ATTEMPTS: u32 = 3;

/// No retry starts later than this after the first attempt: an agent waiting on a summary
/// should hear "try later" rather than hang.
pub const RETRY_WINDOW: Duration = Duration::from_secs(30);

/// The first backoff; each retry doubles it, with ±50 % jitter so that many clients that
/// were refused together do not come back together.
const BASE_BACKOFF: Duration = Duration::from_millis(500);

/// How long to wait for a connection to the API.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one request may take: a summary of a ~150k-token document takes tens of seconds.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// Longest part of an API error message passed on to the caller.
const API_MESSAGE_CHARS: usize = 300;

/// A model that writes summaries.
pub trait SummaryModel: Send + Sync {
    /// The model's name; summaries are cached per model.
    fn model(&self) -> String;
    /// One summary.
    fn summarise(&self, request: &SummaryRequest) -> Result<String, SummariserError>;
}

/// Where and how to reach the API.
#[derive(Clone)]
pub struct AnthropicConfig {
    /// The caller's key; `None` (or empty) means summaries are off.
    pub api_key: Option<String>,
    /// Base URL, e.g. `https://api.anthropic.com`.
    pub base_url: String,
    /// Model name.
    pub model: String,
}

impl std::fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .finish()
    }
}

/// The Anthropic Messages API.
pub struct Anthropic {
    /// Key, model, endpoint and timeouts, as configured.
    config: AnthropicConfig,
    /// Built on first use, on the thread that makes the call.
    client: OnceLock<Result<reqwest::blocking::Client, String>>,
}

impl Anthropic {
    /// A client for `config`. Makes no request until asked for a summary.
    pub fn new(mut config: AnthropicConfig) -> Self {
        config.api_key = config.api_key.filter(|k| !k.trim().is_empty());
        config.base_url = config.base_url.trim_end_matches('/').to_owned();
        Self {
            config,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::blocking::Client, SummariserError> {
        self.client
            .get_or_init(|| {
                // Any provider installed first (by another part of the process) is fine.
                let _ = rustls::crypto::ring::default_provider().install_default();
                reqwest::blocking::Client::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .timeout(REQUEST_TIMEOUT)
                    .user_agent(concat!("scratchpad-mcp/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| SummariserError::Failed(format!("cannot build the HTTP client: {e}")))
    }

    /// One attempt: the answer, or how it failed.
    fn attempt(&self, key: &str, body: &serde_json::Value) -> Attempt {
        let client = match self.client() {
            Ok(client) => client,
            Err(e) => return Attempt::Final(e),
        };
        let response = client
            .post(format!("{}/v1/messages", self.config.base_url))
            .header("x-api-key", key)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(body)
            .send();
        let response = match response {
            Ok(r) => r,
            Err(e) if e.is_timeout() => {
                return Attempt::Final(SummariserError::Failed(
                    "the Anthropic API did not answer in time".into(),
                ));
            }
            Err(e) if e.is_connect() => {
                return Attempt::Final(SummariserError::Failed(format!(
                    "cannot connect to the Anthropic API at {}",
                    self.config.base_url
                )));
            }
            Err(_) => {
                return Attempt::Final(SummariserError::Failed(
                    "the request to the Anthropic API failed".into(),
                ));
            }
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let text = match response.text() {
            Ok(text) => text,
            Err(_) => {
                return Attempt::Final(SummariserError::Failed(
                    "the Anthropic API's answer was cut off".into(),
                ));
            }
        };
        classify(status, retry_after, &text)
    }
}

/// What one attempt came to.
#[derive(Debug, PartialEq)]
enum Attempt {
    Done(String),
    /// Worth another try, after at least this long (from `retry-after`).
    Retry(SummariserError, Option<Duration>),
    Final(SummariserError),
}

/// Sorts an HTTP answer into done, retry, or give up.
fn classify(status: u16, retry_after: Option<Duration>, body: &str) -> Attempt {
    let api_message = || {
        serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
            .map(|m| m.chars().take(API_MESSAGE_CHARS).collect::<String>())
            .unwrap_or_default()
    };
    match status {
        200 => match extract_text(body) {
            Ok(text) => Attempt::Done(text),
            Err(e) => Attempt::Final(e),
        },
        401 | 403 => Attempt::Final(SummariserError::Unauthorized(format!(
            "the Anthropic API refused the key (HTTP {status}); check ANTHROPIC_API_KEY"
        ))),
        429 if is_spend_limit(&api_message()) => {
            Attempt::Final(SummariserError::Unavailable(format!(
                "the Anthropic API refused the call: the key's spend limit is reached (HTTP 429: {})",
                api_message()
            )))
        }
        429 => Attempt::Retry(
            SummariserError::Unavailable(
                "the Anthropic API is rate limiting this key (HTTP 429)".into(),
            ),
            retry_after,
        ),
        500..=599 => Attempt::Retry(
            SummariserError::Unavailable(format!(
                "the Anthropic API is unavailable or overloaded (HTTP {status})"
            )),
            retry_after,
        ),
        _ => Attempt::Final(SummariserError::Failed(format!(
            "the Anthropic API rejected the request (HTTP {status}: {})",
            api_message()
        ))),
    }
}

/// A 429 that waiting will not cure: the account's spend or credit limit.
fn is_spend_limit(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "spend limit",
        "spending limit",
        "credit balance",
        "usage limit",
        "billing",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// The text of a Messages API answer: every `text` block, in order, by type not position.
fn extract_text(body: &str) -> Result<String, SummariserError> {
    let malformed = || {
        SummariserError::Failed(
            "the Anthropic API's answer was not the expected JSON (cut off?)".into(),
        )
    };
    let value: serde_json::Value = serde_json::from_str(body).map_err(|_| malformed())?;
    let blocks = value["content"].as_array().ok_or_else(malformed)?;
    let text: String = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    if text.trim().is_empty() {
        return Err(SummariserError::Failed(
            "the model's answer held no text".into(),
        ));
    }
    Ok(text)
}

/// The wait before retry `attempt` (1-based): `retry-after` if the API gave one, else a
/// jittered exponential backoff.
fn backoff(attempt: u32, retry_after: Option<Duration>) -> Duration {
    retry_after.unwrap_or_else(|| {
        let exp = BASE_BACKOFF * 2u32.pow(attempt.saturating_sub(1));
        let jitter = (RandomState::new().hash_one(Instant::now()) % 1000) as f64 / 1000.0;
        exp.mul_f64(0.5 + jitter)
    })
}

impl SummaryModel for Anthropic {
    fn model(&self) -> String {
        self.config.model.clone()
    }

    fn summarise(&self, request: &SummaryRequest) -> Result<String, SummariserError> {
        let Some(key) = self.config.api_key.as_deref() else {
            return Err(SummariserError::NotConfigured(
                "summarize_file needs ANTHROPIC_API_KEY (your own Claude API key) in the server's \
                 environment or in the env block of your MCP client's config; every other tool \
                 works without it"
                    .into(),
            ));
        };
        let body = serde_json::json!({
            "model": self.config.model,
            "max_tokens": request.max_tokens,
            "system": request.system,
            "messages": [{ "role": "user", "content": request.prompt }],
        });
        let started = Instant::now();
        let mut attempt = 1;
        loop {
            match self.attempt(key, &body) {
                Attempt::Done(text) => return Ok(text),
                Attempt::Final(e) => return Err(e),
                Attempt::Retry(e, retry_after) => {
                    let wait = backoff(attempt, retry_after);
                    let too_late = started.elapsed() + wait > RETRY_WINDOW;
                    if attempt >= MAX_ATTEMPTS || too_late {
                        tracing::warn!(attempt, "summariser gave up");
                        return Err(with_attempts(e, attempt));
                    }
                    tracing::info!(
                        attempt,
                        wait_ms = wait.as_millis() as u64,
                        "summariser retrying"
                    );
                    std::thread::sleep(wait);
                    attempt += 1;
                }
            }
        }
    }
}

fn with_attempts(e: SummariserError, attempts: u32) -> SummariserError {
    match e {
        SummariserError::Unavailable(m) => SummariserError::Unavailable(format!(
            "{m}; gave up after {attempts} attempt(s), try again later"
        )),
        other => other,
    }
}

/// Shares one request among concurrent calls that need the same summary.
pub struct SingleFlight<M> {
    /// The model that actually answers.
    inner: M,
    /// Requests being answered now, by the hash of what they ask; a second asker waits on the first.
    in_flight: Mutex<HashMap<[u8; 32], Arc<Flight>>>,
}

#[derive(Default)]
struct Flight {
    /// The answer, once the first asker has it.
    result: Mutex<Option<Result<String, SummariserError>>>,
    /// Wakes the askers waiting for this answer.
    done: Condvar,
}

impl<M: SummaryModel> SingleFlight<M> {
    /// Wraps a model.
    pub fn new(inner: M) -> Self {
        Self {
            inner,
            in_flight: Mutex::default(),
        }
    }
}

impl<M: SummaryModel> SummaryModel for SingleFlight<M> {
    fn model(&self) -> String {
        self.inner.model()
    }

    fn summarise(&self, request: &SummaryRequest) -> Result<String, SummariserError> {
        let mut key = Sha256::new();
        for part in [&self.inner.model(), &request.system, &request.prompt] {
            key.update(part.len().to_le_bytes());
            key.update(part);
        }
        key.update(request.max_tokens.to_le_bytes());
        let key: [u8; 32] = key.finalize().into();

        let (flight, leader) = {
            let mut map = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            match map.get(&key) {
                Some(flight) => (Arc::clone(flight), false),
                None => {
                    let flight = Arc::new(Flight::default());
                    map.insert(key, Arc::clone(&flight));
                    (flight, true)
                }
            }
        };
        if leader {
            let result = self.inner.summarise(request);
            *flight.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(result.clone());
            flight.done.notify_all();
            self.in_flight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
            return result;
        }
        let mut result = flight.result.lock().unwrap_or_else(|p| p.into_inner());
        while result.is_none() {
            result = flight.done.wait(result).unwrap_or_else(|p| p.into_inner());
        }
        result.clone().expect("set before notify")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_read_from_blocks_by_type() {
        let body = r#"{"content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"A "},{"type":"text","text":"summary"}]}"#;
        assert_eq!(classify(200, None, body), Attempt::Done("A summary".into()));
    }

    #[test]
    fn truncated_or_empty_answers_are_errors() {
        for body in [
            r#"{"content":[{"type":"text","te"#,
            r#"{"content":[]}"#,
            "{}",
        ] {
            assert!(
                matches!(
                    classify(200, None, body),
                    Attempt::Final(SummariserError::Failed(_))
                ),
                "{body}"
            );
        }
    }

    #[test]
    fn statuses_sort_into_retry_or_final() {
        let wait = Some(Duration::from_secs(2));
        assert!(matches!(classify(429, wait, "{}"), Attempt::Retry(_, w) if w == wait));
        assert!(matches!(classify(529, None, ""), Attempt::Retry(_, None)));
        assert!(matches!(classify(503, None, ""), Attempt::Retry(_, None)));
        assert!(matches!(
            classify(401, None, ""),
            Attempt::Final(SummariserError::Unauthorized(_))
        ));
        assert!(matches!(
            classify(400, None, ""),
            Attempt::Final(SummariserError::Failed(_))
        ));
        let spend = r#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified API usage limits."}}"#;
        assert!(matches!(
            classify(429, wait, spend),
            Attempt::Final(SummariserError::Unavailable(_))
        ));
    }

    #[test]
    fn backoff_honours_retry_after_and_grows() {
        assert_eq!(
            backoff(1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        let first = backoff(1, None);
        assert!(first >= BASE_BACKOFF / 2 && first <= BASE_BACKOFF * 3 / 2);
        let third = backoff(3, None);
        assert!(third >= BASE_BACKOFF * 2 && third <= BASE_BACKOFF * 6);
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let config = AnthropicConfig {
            api_key: Some("sk-ant-secret".into()),
            base_url: DEFAULT_BASE_URL.into(),
            model: DEFAULT_MODEL.into(),
        };
        assert!(!format!("{config:?}").contains("secret"));
    }
}
