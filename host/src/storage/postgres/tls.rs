//! TLS to PostgreSQL, when the URL asks for it.
//!
//! `sslmode=require` (or a `sslrootcert=FILE`, which implies it) connects with rustls (ring)
//! and checks the server's certificate and its name (the URL's host), against the CA file
//! when one is given and against the system's roots otherwise, as libpq's `verify-full`
//! does. Otherwise the connection is plain: the default `prefer` would encrypt without
//! checking whom it talks to, which is not worth pretending about.

use rustls::ClientConfig;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::Path;
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// How connections are made.
#[derive(Clone)]
pub enum Connector {
    /// Without TLS.
    Plain,
    /// With TLS, the server verified.
    Tls(MakeRustlsConnect),
}

/// A verifying TLS connector trusting the CAs in `root_cert`, or the system's roots.
pub fn verifying(root_cert: Option<&Path>) -> Result<Connector, String> {
    let mut roots = rustls::RootCertStore::empty();
    match root_cert {
        Some(path) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect())
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "sslrootcert {}: no CA certificate in it",
                    path.display()
                ));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(
                    "sslmode=require, but the system has no CA certificates: give the CA with sslrootcert=FILE"
                        .into(),
                );
            }
        }
    }
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(Connector::Tls(MakeRustlsConnect::new(config)))
}
