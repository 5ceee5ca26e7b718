//! Hosted mode: MCP over Streamable HTTP (rmcp's server, on axum), for one service shared by
//! many callers.
//!
//! - `/mcp`: the MCP endpoint, behind bearer keys ([`crate::keys`]) or, with `[http.oauth]`,
//!   OAuth access tokens ([`crate::oauth`]): a token lacking the scope a request needs gets
//!   403 `insufficient_scope` naming it, before the request reaches MCP. rmcp validates `Host`
//!   (loopback plus `allowed_hosts`, against DNS rebinding) and `Origin` (loopback's plus
//!   `allowed_origins`; any other is 403). The caller's identity is the key's; the gate in
//!   [`crate::mcp`] refuses a call for another agent, a write with a read-only key, or an
//!   agent over its rate, before any storage work.
//! - `/.well-known/oauth-protected-resource[/mcp]`: with `[http.oauth]`, the metadata (RFC
//!   9728) every 401 points at, naming the authorization servers.
//! - `/health`: no key, no store: says the process is serving.
//! - `/metrics`: call counts and times by tool and outcome, in Prometheus' text format.
//!
//! The server refuses to start with no key and no authorization server configured: an open
//! door is never the default.
//!
//! A body is read up to the longest message a call within the limits needs
//! ([`crate::message`]): past that, 413 with a JSON-RPC error saying the bound and where it
//! comes from. A body rmcp cannot read as a message (not JSON, nested too deep, not
//! JSON-RPC), which it refuses as 415 with serde's words, gets what MCP's HTTP transport
//! asks for instead: 400 with a JSON-RPC error saying why, under the request's id when it
//! can be found. Either way the client shows the reason, not only a status.
//!
//! What one client may hold is bounded (`[http]`, [`crate::settings::HTTP_BOUNDS`]): connections open at once
//! (one more is closed before a byte is read), the time to send a request's headers (also
//! how long a connection may sit idle) and its body, and calls in flight for the server and
//! for each key ([`crate::in_flight`]).

use crate::gate::{Gate, Metrics};
use crate::in_flight::{Bounds, InFlight};
use crate::keys::{Access, KeyRing, Keys};
use crate::mcp::McpServer;
use crate::message::{self, MaxMessage};
use crate::oauth::metadata;
use crate::oauth::token::Verifier;
use crate::rate::RateLimiter;
use crate::service::Service;
use crate::settings::{DEFAULT_LISTEN, HttpSettings};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rmcp::model::{ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::bytes::BytesMut;
use tower_http::timeout::RequestBodyTimeout;

/// Why hosted mode could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// No API key is configured, and no authorization server.
    #[error(
        "serve --http needs at least one API key or an authorization server: add a key with `scratchpad-mcp keys add NAME --agent ID` (it goes into the config file, hashed), or configure [http.oauth]"
    )]
    NoKeys,
    /// The OAuth token checks could not be set up.
    #[error("cannot check OAuth tokens: {0}")]
    OAuth(String),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
    /// The server stopped with an error.
    #[error("the HTTP server failed: {0}")]
    Serve(String),
}

/// Where it listens: `--http ADDR`, else the config's `listen`, else loopback.
pub fn address(flag: Option<SocketAddr>, http: &HttpSettings) -> SocketAddr {
    flag.or(http.listen)
        .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("the default address parses"))
}

/// Browser origins always accepted: pages served from this machine (the MCP Inspector's,
/// say). DNS rebinding comes from a foreign origin, which is refused unless configured.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// The router: `/mcp` behind the keys, `/health` and `/metrics` open.
/// The keys are `keys`, which [`reload_keys_on_hangup`] may replace while serving.
pub fn router(
    service: Arc<Service>,
    http: &HttpSettings,
    keys: Arc<KeyRing>,
) -> Result<axum::Router, HttpError> {
    if keys.is_empty() && http.oauth.is_none() {
        return Err(HttpError::NoKeys);
    }
    let verifier = match &http.oauth {
        Some(oauth) => Some(Arc::new(
            Verifier::new(oauth.clone()).map_err(HttpError::OAuth)?,
        )),
        None => None,
    };
    let metrics = Arc::new(Metrics::default());
    let gate = Arc::new(Gate {
        limiter: http
            .calls_per_second
            .map(|rate| RateLimiter::new(rate, http.burst.unwrap_or(rate.ceil() as u32))),
        summaries: http.summaries_per_day.map(|per_day| {
            let over_a_day = f64::from(per_day) / 86_400.0;
            (per_day, RateLimiter::new(over_a_day, per_day))
        }),
        in_flight: Some(InFlight::new(Bounds {
            server: http.limits().max_calls_in_flight,
            per_key: http.limits().max_calls_in_flight_per_key,
        })),
    });
    let max = MaxMessage::of(service.limits());
    let server = McpServer::new(service).gated(gate, Arc::clone(&metrics));
    let mut config = StreamableHttpServerConfig::default();
    config.max_request_body_bytes = max.bytes;
    // No sessions in memory, in either protocol era: any instance behind a load balancer
    // can answer any request, with no sticky routing. The server never pushes messages,
    // so there is nothing a session would carry; answers are plain JSON.
    config.legacy_session_mode = false;
    config.json_response = true;
    config
        .allowed_hosts
        .extend(http.allowed_hosts.iter().cloned());
    config.allowed_origins = LOOPBACK_ORIGINS
        .iter()
        .map(|o| (*o).to_owned())
        .chain(http.allowed_origins.iter().cloned())
        .collect();
    let config = config.enforce_origin_validation();
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let max = Arc::new(max);
    let auth = Arc::new(Auth {
        keys,
        verifier: verifier.clone(),
        max: Arc::clone(&max),
    });
    // The later layer runs first: the caller's proof, then the body.
    let protected = axum::Router::new()
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(max, read_message))
        .layer(middleware::from_fn_with_state(auth, authenticate));
    let mut open = axum::Router::new();
    if let Some(verifier) = verifier {
        let document: Arc<str> = metadata::document(verifier.settings()).to_string().into();
        for path in metadata::paths(verifier.settings()) {
            let document = Arc::clone(&document);
            open = open.route(
                &path,
                get(move || async move {
                    (
                        [(header::CONTENT_TYPE, "application/json")],
                        document.to_string(),
                    )
                }),
            );
        }
    }
    Ok(open
        .route("/health", get(|| async { "ok\n" }))
        .route(
            "/metrics",
            get(move || {
                let text = metrics.render();
                async move { ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text) }
            }),
        )
        .merge(protected))
}

/// What a connection may hold: how many there are at once, and how long a client may take.
#[derive(Clone, Copy, Debug)]
pub struct Connections {
    /// Connections open at once.
    pub max: u32,
    /// To send a request's headers, or to send the next one on an idle connection.
    pub header_timeout: Duration,
    /// To send a request's body.
    pub body_timeout: Duration,
}

impl Connections {
    /// The bounds `[http]` sets.
    pub fn of(http: &HttpSettings) -> Self {
        let limits = http.limits();
        let seconds = |s| Duration::from_secs(u64::from(s));
        Self {
            max: limits.max_connections,
            header_timeout: seconds(limits.header_timeout_seconds),
            body_timeout: seconds(limits.body_timeout_seconds),
        }
    }
}

/// Serves until Ctrl-C or SIGTERM, then lets the calls in progress finish (for at most
/// [`DRAIN_TIME`]).
pub async fn serve(
    router: axum::Router,
    addr: SocketAddr,
    connections: Connections,
) -> Result<(), HttpError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| HttpError::Bind {
            addr,
            reason: e.to_string(),
        })?;
    tracing::info!(%addr, "serving MCP over HTTP at /mcp");
    let open = Arc::new(tokio::sync::Semaphore::new(connections.max as usize));
    let graceful = GracefulShutdown::new();
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(connections.header_timeout);
    let app = RequestBodyTimeout::new(router, connections.body_timeout);
    let stop = stop_signal();
    tokio::pin!(stop);
    loop {
        let (socket, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, say: wait a little rather than spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Ok(place) = Arc::clone(&open).try_acquire_owned() else {
            tracing::warn!(%peer, max = connections.max, "connection closed: as many are open as may be");
            drop(socket);
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        let connection = graceful.watch(http1.serve_connection(TokioIo::new(socket), service));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
            drop(place);
        });
    }
    tracing::info!("stopping: finishing the calls in progress");
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(DRAIN_TIME) => {
            tracing::warn!("connections still open after {} s; closing them", DRAIN_TIME.as_secs());
        }
    }
    Ok(())
}

/// Reads the keys from `config_file` again at every `SIGHUP` and puts them in force; a file
/// that cannot be read leaves the keys in force as they were, and says why in the log.
pub async fn reload_keys_on_hangup(keys: Arc<KeyRing>, config_file: std::path::PathBuf) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hangups) = signal(SignalKind::hangup()) else {
            tracing::warn!("SIGHUP cannot be caught; keys are read at start only");
            return;
        };
        while hangups.recv().await.is_some() {
            match crate::keys::read(&config_file) {
                Ok(entries) => {
                    keys.replace(Keys::new(&entries));
                    tracing::info!(keys = entries.len(), "API keys read again");
                }
                Err(e) => {
                    tracing::error!(error = %e, "API keys not read again; those in force stay")
                }
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (keys, config_file);
}

/// How long a stopping server waits for open connections (an idle event stream stays open
/// until its client leaves) before it closes them.
const DRAIN_TIME: Duration = Duration::from_secs(10);

/// Ctrl-C, or SIGTERM (what service managers and orchestrators send to stop a server).
async fn stop_signal() {
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// What `/mcp` takes as a caller's proof: the keys in force, and tokens when configured.
struct Auth {
    /// The keys in force; SIGHUP swaps the ring inside, so every request sees the new keys.
    keys: Arc<KeyRing>,
    /// Checks bearer tokens when `[http.oauth]` is set; shared for its cached issuer keys.
    verifier: Option<Arc<Verifier>>,
    /// The longest body read: a token's request is read whole to see which scope it needs.
    max: Arc<MaxMessage>,
}

/// Lets a request with a known bearer key, or a valid token with the scope the request
/// needs, through, carrying its identity; 401 (or 403 for a missing scope) otherwise.
async fn authenticate(State(auth): State<Arc<Auth>>, mut request: Request, next: Next) -> Response {
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_owned);
    let Some(bearer) = bearer else {
        let needed = match auth.verifier {
            Some(_) => {
                "an API key or an OAuth access token is needed: send it as Authorization: Bearer KEY"
            }
            None => "an API key is needed: send it as Authorization: Bearer KEY",
        };
        return unauthorized(&auth, needed, None);
    };
    if let Some(identity) = auth.keys.identify(&bearer) {
        request.extensions_mut().insert(identity);
        return next.run(request).await;
    }
    let unknown_key = "the API key is not known (revoked or mistyped)";
    let Some(verifier) = auth
        .verifier
        .as_ref()
        .filter(|_| !bearer.starts_with(KEY_PREFIX))
    else {
        return unauthorized(&auth, unknown_key, Some(unknown_key));
    };
    let identity = match verifier.identify(&bearer).await {
        Ok(identity) => identity,
        Err(e) => {
            tracing::info!(reason = %e, "refused: an OAuth token");
            let why = e.to_string();
            return unauthorized(&auth, &why, Some(&why));
        }
    };
    // Which scope the request needs is in its body: read it whole, then hand it on.
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, &auth.max).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    if let Some(lacking) = needs(&bytes).into_iter().find(|a| !identity.may(*a)) {
        let settings = verifier.settings();
        let scope = settings.scope_for(lacking);
        tracing::info!(subject = %identity.name, scope, "refused: a token without the scope");
        let mut response = (
            StatusCode::FORBIDDEN,
            format!(
                "the token (\"{}\") lacks the scope {scope} this request needs\n",
                identity.name
            ),
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&metadata::insufficient_scope(settings, scope)) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        return response;
    }
    let mut request = Request::from_parts(parts, Body::from(bytes));
    request.extensions_mut().insert(identity);
    next.run(request).await
}

/// Reads the body whole, up to the longest message a call needs, and hands it to MCP. A JSON
/// body rmcp refuses as no message it can read (its 415, which it also gives a body sent as
/// another type) is answered 400 with a JSON-RPC error saying why.
async fn read_message(
    State(max): State<Arc<MaxMessage>>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let sent_as_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    let bytes = match read_body(body, &max).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE || !sent_as_json {
        return response;
    }
    match message::unreadable(&bytes) {
        Some(why) => refused(StatusCode::BAD_REQUEST, why, message::request_id(&bytes)),
        None => response,
    }
}

/// A request's body, or the answer to one longer than `max` (413, under the id of the request
/// it began, when that came before the bound; sent once the client has sent the rest, which
/// is dropped unkept) or cut off (400).
async fn read_body(mut body: Body, max: &MaxMessage) -> Result<Bytes, Response> {
    let mut read = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Err((
                StatusCode::BAD_REQUEST,
                "the request body was cut off, or did not arrive within the body timeout\n",
            )
                .into_response());
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.len() > max.bytes - read.len() {
            read.extend_from_slice(&data[..max.bytes - read.len()]);
            let id = message::request_id(&read);
            // The rest is read and dropped (for at most the body timeout): a client still
            // sending when the connection closed would get a reset, not this answer.
            drop(read);
            while let Some(Ok(_)) = body.frame().await {}
            return Err(refused(StatusCode::PAYLOAD_TOO_LARGE, max.refusal(), id));
        }
        read.extend_from_slice(&data);
    }
    Ok(read.freeze())
}

/// `status`, with `error` as a JSON-RPC error in the body (under `id`), as MCP's HTTP
/// transport answers a request it cannot take: clients show the error's message.
fn refused(status: StatusCode, error: ErrorData, id: Option<RequestId>) -> Response {
    let body = serde_json::to_string(&ServerJsonRpcMessage::error(error, id))
        .unwrap_or_else(|_| String::from("{}"));
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// How every key `keys add` makes begins: such a bearer is a key, never a token to check.
const KEY_PREFIX: &str = "sk-scratchpad-";

/// A 401 saying `reason`; with tokens configured its challenge points at the metadata, and
/// names why a bearer that was sent is invalid.
fn unauthorized(auth: &Auth, reason: &str, invalid: Option<&str>) -> Response {
    let challenge = match &auth.verifier {
        Some(verifier) => metadata::unauthorized(verifier.settings(), invalid),
        None => "Bearer".to_owned(),
    };
    let mut response = (StatusCode::UNAUTHORIZED, format!("{reason}\n")).into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// What a request to `/mcp` needs: reading, whatever it is, and for each tool call in it the
/// tool's own kind (a body that is not JSON-RPC needs reading only; MCP answers it).
fn needs(body: &[u8]) -> Vec<Access> {
    let mut needed = vec![Access::Read];
    let messages = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Array(batch)) => batch,
        Ok(one) => vec![one],
        Err(_) => Vec::new(),
    };
    for message in &messages {
        if message.get("method").and_then(|m| m.as_str()) == Some("tools/call")
            && let Some(tool) = message
                .pointer("/params/name")
                .and_then(|n| n.as_str())
                .and_then(crate::service::ToolName::parse)
        {
            needed.push(crate::mcp::access(tool));
        }
    }
    needed
}
