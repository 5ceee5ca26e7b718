//! The PostgreSQL address, kept away from logs: it may carry a password.

use std::fmt;
use std::path::PathBuf;

/// A `postgres://` or `postgresql://` URL. Shown (`Display`, `Debug`) with its password as
/// `***`, so printing settings or an error never gives the password away.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

/// Why a database address was refused.
#[derive(Debug, thiserror::Error)]
#[error("the database must be a postgres:// or postgresql:// URL (got {0})")]
pub struct NotAUrl(String);

impl DatabaseUrl {
    /// Checks the scheme; the rest is PostgreSQL's to judge when it connects.
    pub fn parse(text: &str) -> Result<Self, NotAUrl> {
        let url = Self(text.trim().to_owned());
        if ["postgres://", "postgresql://"]
            .iter()
            .any(|s| url.0.starts_with(s))
        {
            Ok(url)
        } else {
            Err(NotAUrl(url.to_string()))
        }
    }

    /// The URL for the driver, without `sslrootcert` (which the driver does not know and
    /// this backend handles), and that CA file.
    pub(super) fn for_driver(&self) -> (String, Option<PathBuf>) {
        let Some((base, query)) = self.0.split_once('?') else {
            return (self.0.clone(), None);
        };
        let mut root_cert = None;
        let kept: Vec<&str> = query
            .split('&')
            .filter(|p| match p.split_once('=') {
                Some(("sslrootcert", file)) => {
                    root_cert = Some(PathBuf::from(file));
                    false
                }
                _ => true,
            })
            .collect();
        if kept.is_empty() {
            (base.to_owned(), root_cert)
        } else {
            (format!("{base}?{}", kept.join("&")), root_cert)
        }
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = &self.0;
        let after_scheme = text.find("://").map_or(0, |i| i + 3);
        let authority_end = text[after_scheme..]
            .find(['/', '?'])
            .map_or(text.len(), |i| after_scheme + i);
        let mut shown = text.clone();
        // `user:password@host`: the password is between the first ':' and the last '@'.
        if let Some(at) = text[after_scheme..authority_end].rfind('@') {
            let userinfo = &text[after_scheme..after_scheme + at];
            if let Some(colon) = userinfo.find(':') {
                shown.replace_range(after_scheme + colon + 1..after_scheme + at, "***");
            }
        }
        // `?password=...` among the parameters.
        if let Some(q) = shown.find('?') {
            let params: Vec<String> = shown[q + 1..]
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_owned(),
                })
                .collect();
            shown = format!("{}?{}", &shown[..q], params.join("&"));
        }
        f.write_str(&shown)
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        for (url, shown) in [
            (
                "postgres://sp:s3cret@db:5432/sp",
                "postgres://sp:***@db:5432/sp",
            ),
            (
                "postgresql://sp:p@ss@db/sp?sslmode=disable",
                "postgresql://sp:***@db/sp?sslmode=disable",
            ),
            (
                "postgres://db/sp?user=sp&password=s3cret",
                "postgres://db/sp?user=sp&password=***",
            ),
            ("postgres://sp@db/sp", "postgres://sp@db/sp"),
        ] {
            let url = DatabaseUrl::parse(url).unwrap();
            assert_eq!(url.to_string(), shown);
            assert!(!format!("{url:?}").contains("s3cret") && !format!("{url:?}").contains("p@ss"));
        }
    }

    #[test]
    fn the_ca_file_is_taken_out_for_the_backend() {
        let url = DatabaseUrl::parse("postgres://u:p@db/x?sslmode=require&sslrootcert=/ca.pem&x=1")
            .unwrap();
        assert_eq!(
            url.for_driver(),
            (
                "postgres://u:p@db/x?sslmode=require&x=1".into(),
                Some("/ca.pem".into())
            )
        );
        let url = DatabaseUrl::parse("postgres://db/x?sslrootcert=/ca.pem").unwrap();
        assert_eq!(
            url.for_driver(),
            ("postgres://db/x".into(), Some("/ca.pem".into()))
        );
        let plain = DatabaseUrl::parse("postgres://db/x").unwrap();
        assert_eq!(plain.for_driver(), ("postgres://db/x".into(), None));
    }

    #[test]
    fn other_schemes_are_refused_without_their_password() {
        let e = DatabaseUrl::parse("mysql://u:s3cret@db/x").unwrap_err();
        assert!(e.to_string().contains("postgres://"), "{e}");
        assert!(!e.to_string().contains("s3cret"), "{e}");
        assert!(DatabaseUrl::parse("host=db password=x").is_err());
    }
}
