//! Where things live and how the summariser is reached: from flags, then the environment,
//! then per-user defaults that do not depend on the folder a client launched the server from.

use crate::summariser::{AnthropicConfig, DEFAULT_BASE_URL, DEFAULT_MODEL};
use std::path::PathBuf;

/// The file name of the store inside the per-user data folder.
const DB_FILE: &str = "scratchpad.db";

/// Everything needed to open a [`crate::Service`].
#[derive(Clone, Debug)]
pub struct Settings {
    /// The SQLite file.
    pub db: PathBuf,
    /// Where the compiled component is cached; `None` compiles at every start.
    pub cache_dir: Option<PathBuf>,
    /// The summariser.
    pub anthropic: AnthropicConfig,
}

/// No per-user folder could be found for the store.
#[derive(Debug, thiserror::Error)]
#[error(
    "no per-user data folder is known on this system; pass --db PATH or set SCRATCHPAD_DB_PATH"
)]
pub struct NoDataDir;

impl Settings {
    /// Resolves settings: an explicit value wins, else the environment, else the default.
    /// `db` and `cache_dir` come from the command line (which also reads their variables).
    pub fn resolve(db: Option<PathBuf>, cache_dir: Option<PathBuf>) -> Result<Self, NoDataDir> {
        let db = match db {
            Some(db) => db,
            None => dirs::data_dir()
                .ok_or(NoDataDir)?
                .join("scratchpad-mcp")
                .join(DB_FILE),
        };
        let cache_dir = cache_dir.or_else(|| dirs::cache_dir().map(|d| d.join("scratchpad-mcp")));
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Ok(Self {
            db,
            cache_dir,
            anthropic: AnthropicConfig {
                api_key: var("ANTHROPIC_API_KEY"),
                base_url: var("ANTHROPIC_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.into()),
                model: var("SCRATCHPAD_SUMMARY_MODEL").unwrap_or_else(|| DEFAULT_MODEL.into()),
            },
        })
    }
}
