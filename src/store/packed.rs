//! The cache columns' on-disk form: large JSON values (`file_cache.symbols`,
//! `function_cache.call_args`) are stored as LZ4 blocks (a BLOB), about a
//! fifth of their text size, so a whole-repository store stays within
//! SQLite's page cache longer. Rows written as TEXT by older versions still
//! read. A function's cache row is serialised once, by the worker that
//! computed it, and compared with the store's by a digest, so the indexer's
//! mirror of the store need not keep the decoded row.

use crate::db::FunctionCache;
use anyhow::Result;
use rusqlite::types::ValueRef;

/// Compress a JSON text for a cache column.
pub fn pack(json: &str) -> Vec<u8> {
    lz4_flex::compress_prepend_size(json.as_bytes())
}

/// The JSON text of a cache column: a packed BLOB or (older rows) TEXT.
/// `None` when it cannot be read (the row is then treated as absent).
pub fn unpack(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Text(t) => String::from_utf8(t.to_vec()).ok(),
        ValueRef::Blob(b) => lz4_flex::decompress_size_prepended(b)
            .ok()
            .and_then(|t| String::from_utf8(t).ok()),
        _ => None,
    }
}

/// A digest of a cache row, over exactly what the store holds of it.
pub fn digest(
    hashes: [Option<&str>; 3],
    summary_json: Option<&str>,
    call_args_json: &str,
) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    for part in hashes
        .into_iter()
        .chain([summary_json, Some(call_args_json)])
    {
        match part {
            None => h.update(&[0]),
            Some(s) => h
                .update(&[1])
                .update(&(s.len() as u64).to_le_bytes())
                .update(s.as_bytes()),
        };
    }
    *h.finalize().as_bytes()
}

/// A function's cache row, ready to write.
#[derive(Debug, Clone)]
pub struct PackedCache {
    /// `inputs_hash`.
    pub inputs_hash: Option<String>,
    /// `results_hash`.
    pub results_hash: Option<String>,
    /// `summary_inputs_hash`.
    pub summary_inputs_hash: Option<String>,
    /// `summary` as JSON (small: stays TEXT).
    pub summary: Option<String>,
    /// `call_args`, packed.
    pub call_args: Vec<u8>,
    /// [`digest`] of the row.
    pub digest: [u8; 32],
}

impl PackedCache {
    /// Serialise and pack a cache row.
    pub fn new(c: &FunctionCache) -> Result<PackedCache> {
        let summary = c.summary.as_ref().map(serde_json::to_string).transpose()?;
        let call_args = serde_json::to_string(&c.call_args)?;
        let digest = digest(
            [
                c.inputs_hash.as_deref(),
                c.results_hash.as_deref(),
                c.summary_inputs_hash.as_deref(),
            ],
            summary.as_deref(),
            &call_args,
        );
        Ok(PackedCache {
            inputs_hash: c.inputs_hash.clone(),
            results_hash: c.results_hash.clone(),
            summary_inputs_hash: c.summary_inputs_hash.clone(),
            summary,
            call_args: pack(&call_args),
            digest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_text_round_trips_and_old_text_rows_still_read() {
        let json = r#"[{"callee":"f","dims":[0,1]}]"#.repeat(50);
        let b = pack(&json);
        assert!(b.len() < json.len() / 4, "{} vs {}", b.len(), json.len());
        assert_eq!(unpack(ValueRef::Blob(&b)).as_deref(), Some(json.as_str()));
        assert_eq!(
            unpack(ValueRef::Text(json.as_bytes())).as_deref(),
            Some(json.as_str())
        );
        assert_eq!(unpack(ValueRef::Blob(b"\x05\0\0\0garbage")), None);
        assert_eq!(unpack(ValueRef::Null), None);
    }

    #[test]
    fn digest_tells_apart_absent_and_empty_parts() {
        let a = digest([None, Some(""), None], None, "[]");
        let b = digest([Some(""), None, None], None, "[]");
        let c = digest([None, Some(""), None], Some(""), "[]");
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, digest([None, Some(""), None], None, "[]"));
    }
}
