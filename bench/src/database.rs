//! A PostgreSQL database of the run's own, made on the server `SCRATCHPAD_TEST_POSTGRES`
//! names and dropped when the run ends.
//!
//! Why not the database that variable names: the tests share it, and it grows with every run
//! of them (tens of megabytes of documents and versions in a day), so the same benchmark on
//! it slowed from one sitting to the next, while SQLite's figures beside them always came
//! from a fresh file. On a database of its own, each run starts as empty as SQLite's.
//! Where the role may not create databases, or the server refuses the bench's connections
//! without TLS, the shared one is used, and [`Database::note`] says why.

use tokio_postgres::NoTls;

/// Where the run's PostgreSQL figures are taken.
pub struct Database {
    /// The URL to give the server (`--database`) and the floor.
    pub url: String,
    /// Whether the database answers a connection without TLS, the only kind the floor
    /// (`floor.rs`) opens.
    pub plain: bool,
    /// The server's URL as given, and the database made from it to drop at the end.
    made: Option<(String, String)>,
}

impl Database {
    /// A fresh database on the server `admin` names (a `postgres://` URL whose role may
    /// create databases), else the database `admin` names itself. `suffix` tells apart the
    /// run's databases: a build before a schema change needs one of its own, since it
    /// refuses a database the newer build migrated.
    pub fn fresh(admin: &str, suffix: &str) -> Self {
        let name = format!("sp_bench_{}{suffix}", std::process::id());
        match (
            with_url(admin, &name),
            run(admin, &format!("CREATE DATABASE {name}")),
        ) {
            (Some(url), Ok(())) => Self {
                url,
                plain: true,
                made: Some((admin.to_owned(), name)),
            },
            _ => Self {
                url: admin.to_owned(),
                plain: run(admin, "SELECT 1").is_ok(),
                made: None,
            },
        }
    }

    /// What to say of the database beside the figures taken on it.
    pub fn note(&self) -> &'static str {
        match (&self.made, self.plain) {
            (Some(_), _) => "a fresh database",
            (None, true) => "the tests' database (this role cannot create one)",
            (None, false) => {
                "the tests' database (the bench connects without TLS, which this server refuses)"
            }
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Some((admin, name)) = &self.made
            && let Err(e) = run(admin, &format!("DROP DATABASE {name} WITH (FORCE)"))
        {
            eprintln!("the benchmark's database {name} was left behind: {e}");
        }
    }
}

/// `url` with its database replaced by `name`; `None` for a URL of another form than
/// `postgres://[user[:password]@]host[:port][/database][?options]`.
fn with_url(url: &str, name: &str) -> Option<String> {
    let (base, options) = match url.split_once('?') {
        Some((base, options)) => (base, Some(options)),
        None => (url, None),
    };
    let (scheme, rest) = base.split_once("://")?;
    if !matches!(scheme, "postgres" | "postgresql") {
        return None;
    }
    let server = rest.split('/').next()?;
    let options = options.map(|o| format!("?{o}")).unwrap_or_default();
    Some(format!("{scheme}://{server}/{name}{options}"))
}

/// Runs `sql` on the database `url` names, on a connection of its own.
fn run(url: &str, sql: &str) -> Result<(), tokio_postgres::Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the benchmark's own statements");
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
        let connection = tokio::spawn(connection);
        let done = client.batch_execute(sql).await;
        drop(client);
        let _ = connection.await;
        done
    })
}

#[cfg(test)]
mod tests {
    use super::with_url;

    #[test]
    fn a_url_names_another_database_with_its_options_kept() {
        let url = |u| with_url(u, "sp_bench_1");
        assert_eq!(
            url("postgres://u:p@127.0.0.1:5432/db?sslmode=disable").as_deref(),
            Some("postgres://u:p@127.0.0.1:5432/sp_bench_1?sslmode=disable")
        );
        assert_eq!(
            url("postgresql://host").as_deref(),
            Some("postgresql://host/sp_bench_1")
        );
        assert_eq!(url("host=localhost dbname=db"), None);
    }
}
