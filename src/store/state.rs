//! What the store holds, read back at the start of a run: per file its
//! hashes and cached symbols, per function its hashes, line and cache row.
//! The driver compares these with what the sources give now and writes only
//! the differences; files whose hashes all match are not parsed at all.

use super::StoreTx;
use crate::db::{FileSymbols, FunctionCache};
use anyhow::Result;
use std::collections::HashMap;
use std::sync::Arc;

/// The stored state of the whole workspace.
#[derive(Debug, Default)]
pub struct StoreState {
    /// `cache_meta` entries.
    pub meta: HashMap<String, String>,
    /// Files by stored path (see [`path_key`]).
    pub files: HashMap<String, StoredFile>,
}

/// One stored file.
#[derive(Debug, Clone, Default)]
pub struct StoredFile {
    /// Hash of its bytes.
    pub content_hash: String,
    /// Its deps hash, when it has a cache row.
    pub deps_hash: Option<String>,
    /// Its cached symbols, when it has a readable cache row.
    pub symbols: Option<Arc<FileSymbols>>,
    /// Its functions by key.
    pub functions: HashMap<String, StoredFunction>,
}

/// One stored function.
#[derive(Debug, Clone)]
pub struct StoredFunction {
    /// Hash of the lowered function.
    pub content_hash: String,
    /// 1-based first line.
    pub line: i64,
    /// Its cache row, when readable, decoded (read at the start of a run
    /// to seed the query database; dropped once it has, see
    /// [`StoreState::forget_cache_rows`]).
    pub cache: Option<FunctionCache>,
    /// `results_hash` of its cache row.
    pub results_hash: Option<String>,
    /// [`super::packed::digest`] of its cache row, when readable: what the
    /// indexer compares a new row with.
    pub cache_digest: Option<[u8; 32]>,
}

impl StoreState {
    /// Drop the decoded cache rows (the digests stay): after they seeded
    /// the query database nothing reads them, and on a whole repository
    /// they are tens of megabytes.
    pub fn forget_cache_rows(&mut self) {
        for f in self.files.values_mut() {
            for g in f.functions.values_mut() {
                g.cache = None;
            }
        }
    }
}

/// The text a path is stored under in `files.path`.
pub fn path_key(rel: &std::path::Path) -> String {
    crate::workspace::display_path(rel)
}

impl StoreTx<'_> {
    /// Read the stored state of the files at `paths` (stored paths) only.
    pub fn load_files(&self, paths: impl Iterator<Item = String>) -> Result<StoreState> {
        let mut state = StoreState::default();
        for path in paths {
            if state.files.contains_key(&path) {
                continue;
            }
            let mut one = self.load_where("f.path = ?1", &[&path])?;
            state.files.extend(one.files.drain());
        }
        Ok(state)
    }

    /// Read the stored state (inside this transaction, so it is what this
    /// run will change).
    pub fn load_state(&self) -> Result<StoreState> {
        let mut state = self.load_where("1", &[])?;
        let mut st = self.tx.prepare("SELECT key, value FROM cache_meta")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        for row in rows {
            let (k, v) = row?;
            state.meta.insert(k, v);
        }
        Ok(state)
    }

    fn load_where(&self, cond: &str, args: &[&dyn rusqlite::ToSql]) -> Result<StoreState> {
        let tx = &self.tx;
        let mut state = StoreState::default();
        let mut by_id: HashMap<i64, String> = HashMap::new();
        {
            let mut st = tx.prepare_cached(&format!(
                "SELECT f.id, f.path, f.content_hash, c.deps_hash, c.symbols \
                 FROM files f LEFT JOIN file_cache c ON c.file_id = f.id WHERE {cond}"
            ))?;
            let rows = st.query_map(args, |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    super::packed::unpack(r.get_ref(4)?),
                ))
            })?;
            for row in rows {
                let (id, path, content_hash, deps_hash, symbols) = row?;
                let symbols = symbols
                    .and_then(|s| serde_json::from_str::<FileSymbols>(&s).ok())
                    .map(Arc::new);
                by_id.insert(id, path.clone());
                state.files.insert(
                    path,
                    StoredFile {
                        content_hash,
                        deps_hash: if symbols.is_some() { deps_hash } else { None },
                        symbols,
                        functions: HashMap::new(),
                    },
                );
            }
        }
        {
            let mut st = tx.prepare_cached(&format!(
                "SELECT fn.id, fn.file_id, fn.key, fn.content_hash, fn.line, \
                 c.function_id IS NOT NULL, c.inputs_hash, c.results_hash, \
                 c.summary_inputs_hash, c.summary, c.call_args \
                 FROM functions fn LEFT JOIN function_cache c ON c.function_id = fn.id \
                 JOIN files f ON f.id = fn.file_id WHERE {cond}"
            ))?;
            let rows = st.query_map(args, |r| {
                let has_cache: bool = r.get(5)?;
                let (cache, results_hash, cache_digest) = if has_cache {
                    let inputs_hash: Option<String> = r.get(6)?;
                    let results_hash: Option<String> = r.get(7)?;
                    let summary_inputs_hash: Option<String> = r.get(8)?;
                    let summary_json: Option<String> = r.get(9)?;
                    let call_args_json = super::packed::unpack(r.get_ref(10)?);
                    let summary = match &summary_json {
                        None => Some(None),
                        Some(s) => serde_json::from_str(s).ok().map(Some),
                    };
                    let call_args = call_args_json
                        .as_deref()
                        .and_then(|s| serde_json::from_str(s).ok());
                    match (summary, call_args) {
                        (Some(summary), Some(call_args)) => {
                            let digest = super::packed::digest(
                                [
                                    inputs_hash.as_deref(),
                                    results_hash.as_deref(),
                                    summary_inputs_hash.as_deref(),
                                ],
                                summary_json.as_deref(),
                                call_args_json.as_deref().unwrap_or_default(),
                            );
                            (
                                Some(FunctionCache {
                                    inputs_hash,
                                    results_hash: results_hash.clone(),
                                    summary_inputs_hash,
                                    summary,
                                    call_args,
                                }),
                                results_hash,
                                Some(digest),
                            )
                        }
                        _ => (None, None, None),
                    }
                } else {
                    (None, None, None)
                };
                Ok((
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    StoredFunction {
                        content_hash: r.get(3)?,
                        line: r.get(4)?,
                        cache,
                        results_hash,
                        cache_digest,
                    },
                ))
            })?;
            for row in rows {
                let (file_id, key, f) = row?;
                if let Some(file) = by_id.get(&file_id).and_then(|p| state.files.get_mut(p)) {
                    file.functions.insert(key, f);
                }
            }
        }
        Ok(state)
    }
}
