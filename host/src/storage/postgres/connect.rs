//! Opening a database: the driver's settings from the URL (a connect timeout, our
//! application name, TLS when asked for) and the first connection, with errors that name the
//! database without its password.

use super::conn::Conn;
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
    let conn = pool.take().map_err(|e| cannot_open(url, e.detail()))?;
    Ok((pool, conn))
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
