//! What the store hands back to a new process: per file, its symbols; per
//! function, its hashes and the results other functions read (summary,
//! call arguments), each with the hash of the inputs it was computed from.
//! A [`FileCache`] is attached to a [`super::SourceFile`] only when the
//! file's content, the content of everything it includes, the include
//! resolution, the configuration and the engine are all unchanged.

use super::FileSymbols;
use crate::facts::{CallArgs, CalleeSummary};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// The cached state of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileCache {
    /// Its symbols.
    pub symbols: Arc<FileSymbols>,
    /// Its functions, by key.
    pub functions: HashMap<String, FunctionCache>,
}

/// The cached state of one function.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FunctionCache {
    /// Hash of the cross-function inputs its results were derived from
    /// (`None` for host functions).
    pub inputs_hash: Option<String>,
    /// Hash of its facts rows and findings.
    pub results_hash: Option<String>,
    /// Hash of the callee summaries its summary was computed with.
    pub summary_inputs_hash: Option<String>,
    /// Its summary (device functions).
    pub summary: Option<CalleeSummary>,
    /// What it passes its callees.
    pub call_args: Vec<CallArgs>,
}
