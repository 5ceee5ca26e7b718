//! Opening a database: the driver's settings from the URL (a connect timeout, our
//! application name, TLS when asked for) and the first connection, with errors that name the
//! database without its password.

use super::conn::{Conn, TRANSACTION_POOLER};
use super::pool::Pool;
use super::tls::{self, Connector};
use super::url::DatabaseUrl;
use crate::storage::StoreError;
use std::time::Duration;
use tokio_postgres::config::SslMode;

/// How long connecting may take unless the URL says (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the database at `url` cannot be used, naming it without its password.
pub(super) fn cannot_open(url: &DatabaseUrl, reason: String) -> StoreError {
    StoreError::Open {
        path: url.to_string(),
        reason,
    }
}

/// A pool for `url` and its first connection: what opening the database means, for the
/// server and for `verify`/`stats` alike.
pub(super) fn first_connection(url: &DatabaseUrl) -> Result<(Pool, Conn), StoreError> {
    let (config, connector) = config(url)?;
    let pool = Pool::new(config, connector);
    let mut conn = pool.take().map_err(|e| cannot_open(url, e.detail()))?;
    refuse_transaction_pooler(url, &pool, &mut conn)?;
    Ok((pool, conn))
}

/// Refuses a database reached through a pooler in transaction mode, which lends each
/// transaction whichever server process is free: a connection here keeps its prepared
/// statements and session settings (the timeouts) in its server process, and would find
/// them gone, or another connection's. Two connections that share a server process tell
/// one: a pooler that has just been handed one back gives it to the next (PgBouncer's
/// default), and without a pooler, or through one in session mode, each has its own. One
/// that slips past this is named by the first statement that finds its process changed.
fn refuse_transaction_pooler(
    url: &DatabaseUrl,
    pool: &Pool,
    first: &mut Conn,
) -> Result<(), StoreError> {
    let open_error = |e: StoreError| cannot_open(url, e.detail());
    let mut second = pool.take().map_err(open_error)?;
    let pids = (first.backend_pid(), second.backend_pid());
    pool.give_back(second, true);
    match pids {
        (Ok(a), Ok(b)) if a == b => Err(cannot_open(url, TRANSACTION_POOLER.into())),
        (Err(e), _) | (_, Err(e)) => Err(open_error(e)),
        _ => Ok(()),
    }
}

/// The driver's settings for `url`, with a connect timeout and our application name unless
/// the URL sets them, and how to connect: with verified TLS when the URL asks for it
/// (`sslmode=require` or `sslrootcert`), see [`tls`].
pub(super) fn config(url: &DatabaseUrl) -> Result<(tokio_postgres::Config, Connector), StoreError> {
    let open_error = |reason: String| cannot_open(url, reason);
    let (text, root_cert) = url.for_driver();
    let mut config: tokio_postgres::Config = text
        .parse()
        .map_err(|e: tokio_postgres::Error| open_error(format!("invalid URL: {e}")))?;
    let connector = if root_cert.is_some() || config.get_ssl_mode() == SslMode::Require {
        config.ssl_mode(SslMode::Require);
        tls::verifying(root_cert.as_deref()).map_err(open_error)?
    } else {
        config.ssl_mode(SslMode::Disable);
        Connector::Plain
    };
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("scratchpad-mcp");
    }
    Ok((config, connector))
}
