//! Incremental writes: per function, by content hash.

use super::Store;
use crate::db::FunctionFacts;
use crate::frontend::SourceDiagnostic;
use anyhow::Result;
use rusqlite::{OptionalExtension, params};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One function as the indexer hands it to the store.
pub struct FunctionRecord {
    /// `scope::name#ordinal`.
    pub key: String,
    /// Unqualified name.
    pub name: String,
    /// Qualified name.
    pub qualified_name: String,
    /// 0-based first line.
    pub start_line: u32,
    /// 0-based first column.
    pub start_col: u32,
    /// Its facts.
    pub facts: Arc<FunctionFacts>,
}

/// One file as the indexer hands it to the store.
pub struct FileRecord {
    /// Relative path with `/` separators.
    pub path: String,
    /// blake3 of the bytes.
    pub content_hash: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Diagnostics outside functions.
    pub diagnostics: Vec<SourceDiagnostic>,
    /// Functions in the file.
    pub functions: Vec<FunctionRecord>,
}

/// What a sync changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SyncStats {
    /// Functions whose rows were (re)written.
    pub functions_written: usize,
    /// Functions whose rows were only shifted to new lines.
    pub functions_moved: usize,
    /// Functions left untouched.
    pub functions_unchanged: usize,
    /// Functions deleted.
    pub functions_deleted: usize,
    /// Files deleted because they no longer exist.
    pub files_deleted: usize,
}

struct Existing {
    id: i64,
    hash: String,
    line: i64,
}

impl Store {
    /// Bring the store in line with `files` in one transaction. With
    /// `complete`, files absent from `files` are deleted (a full index run);
    /// otherwise only `removed` paths are.
    pub fn sync(
        &mut self,
        files: &[FileRecord],
        complete: bool,
        removed: &[String],
    ) -> Result<SyncStats> {
        let tx = self.conn.transaction()?;
        let mut stats = SyncStats::default();
        let present: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let mut to_delete: Vec<(i64, String)> = Vec::new();
        {
            let mut st = tx.prepare("SELECT id, path FROM files")?;
            let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
            for row in rows {
                let (id, path) = row?;
                if (complete && !present.contains(path.as_str())) || removed.contains(&path) {
                    to_delete.push((id, path));
                }
            }
        }
        for (id, _) in &to_delete {
            tx.execute("DELETE FROM files WHERE id = ?1", [id])?;
            stats.files_deleted += 1;
        }
        for file in files {
            sync_file(&tx, file, &mut stats)?;
        }
        tx.commit()?;
        Ok(stats)
    }
}

fn sync_file(
    tx: &rusqlite::Transaction<'_>,
    file: &FileRecord,
    stats: &mut SyncStats,
) -> Result<()> {
    let parse_errors = file
        .diagnostics
        .iter()
        .filter(|d| d.code == "parse-error")
        .count()
        + file
            .functions
            .iter()
            .map(|f| f.facts.function.parse_error_count())
            .sum::<usize>();
    let file_id: i64 = match tx
        .query_row("SELECT id FROM files WHERE path = ?1", [&file.path], |r| {
            r.get(0)
        })
        .optional()?
    {
        Some(id) => {
            tx.execute(
                "UPDATE files SET content_hash = ?1, bytes = ?2, parse_errors = ?3 WHERE id = ?4",
                params![
                    file.content_hash,
                    file.bytes as i64,
                    parse_errors as i64,
                    id
                ],
            )?;
            id
        }
        None => {
            tx.execute(
                "INSERT INTO files(path, content_hash, bytes, parse_errors) VALUES (?1, ?2, ?3, ?4)",
                params![file.path, file.content_hash, file.bytes as i64, parse_errors as i64],
            )?;
            tx.last_insert_rowid()
        }
    };
    // File-level diagnostics are few: rewrite them.
    tx.execute(
        "DELETE FROM diagnostics WHERE file_id = ?1 AND function_id IS NULL",
        [file_id],
    )?;
    {
        let mut ins = tx.prepare_cached(
            "INSERT INTO diagnostics(file_id, function_id, line, col, severity, code, message) \
             VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for d in &file.diagnostics {
            ins.execute(params![
                file_id, d.line, d.col, d.severity, d.code, d.message
            ])?;
        }
    }

    let mut existing: HashMap<String, Existing> = HashMap::new();
    {
        let mut st = tx.prepare_cached(
            "SELECT id, key, content_hash, line FROM functions WHERE file_id = ?1",
        )?;
        let rows = st.query_map([file_id], |r| {
            Ok((
                r.get::<_, String>(1)?,
                Existing {
                    id: r.get(0)?,
                    hash: r.get(2)?,
                    line: r.get(3)?,
                },
            ))
        })?;
        for row in rows {
            let (k, e) = row?;
            existing.insert(k, e);
        }
    }
    for f in &file.functions {
        let line = f.start_line as i64 + 1;
        match existing.remove(&f.key) {
            Some(e) if e.hash == f.facts.content_hash => {
                if e.line != line {
                    shift_function(tx, e.id, line - e.line)?;
                    stats.functions_moved += 1;
                } else {
                    stats.functions_unchanged += 1;
                }
            }
            Some(e) => {
                tx.execute("DELETE FROM functions WHERE id = ?1", [e.id])?;
                insert_function(tx, file_id, f)?;
                stats.functions_written += 1;
            }
            None => {
                insert_function(tx, file_id, f)?;
                stats.functions_written += 1;
            }
        }
    }
    for (_, e) in existing {
        tx.execute("DELETE FROM functions WHERE id = ?1", [e.id])?;
        stats.functions_deleted += 1;
    }
    Ok(())
}

fn shift_function(tx: &rusqlite::Transaction<'_>, id: i64, delta: i64) -> Result<()> {
    tx.execute(
        "UPDATE functions SET line = line + ?1, end_line = end_line + ?1 WHERE id = ?2",
        params![delta, id],
    )?;
    for table in ["accesses", "barriers", "calls", "diagnostics"] {
        tx.execute(
            &format!("UPDATE {table} SET line = line + ?1 WHERE function_id = ?2"),
            params![delta, id],
        )?;
    }
    tx.execute(
        "UPDATE launches SET line = line + ?1 WHERE caller_function_id = ?2",
        params![delta, id],
    )?;
    Ok(())
}

fn opt(v: Option<u64>) -> Option<i64> {
    v.map(|x| x as i64)
}

fn insert_function(
    tx: &rusqlite::Transaction<'_>,
    file_id: i64,
    rec: &FunctionRecord,
) -> Result<()> {
    let f = &rec.facts.function;
    let base = rec.start_line + 1; // relative line 0 → absolute 1-based
    let tparams: Vec<&str> = f.template_params.iter().map(|p| p.name.as_str()).collect();
    tx.prepare_cached(
        "INSERT INTO functions(file_id, name, qualified_name, key, kind, line, end_line, col, \
         content_hash, template_params, launch_bounds, parse_errors) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        file_id,
        rec.name,
        rec.qualified_name,
        rec.key,
        f.kind.as_str(),
        base,
        base + f.line_count,
        rec.start_col + 1,
        rec.facts.content_hash,
        tparams.join(","),
        f.launch_bounds,
        f.parse_error_count() as i64,
    ])?;
    let fid = tx.last_insert_rowid();
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO params(function_id, position, name, type, elem_bytes) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for p in &rec.facts.params {
            st.execute(params![fid, p.position, p.name, p.ty, opt(p.elem_bytes)])?;
        }
    }
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO accesses(function_id, line, col, array, space, is_write, elem_bytes, \
             access_bytes, field_offset, is_atomic, index_text, dims, stmt_id) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )?;
        for a in &f.accesses {
            let dims: Vec<String> = a
                .dims
                .iter()
                .map(|d| d.map(|v| v.to_string()).unwrap_or_else(|| "?".into()))
                .collect();
            st.execute(params![
                fid,
                base + a.span.line,
                a.span.col,
                a.array,
                a.space.as_str(),
                a.is_write,
                opt(a.elem_bytes),
                opt(a.access_bytes),
                opt(a.field_offset),
                a.atomic,
                a.index_text,
                dims.join(","),
                a.stmt.0,
            ])?;
        }
    }
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO barriers(function_id, line, col, kind, barrier_id, thread_count, \
             barrier_id_text, thread_count_text, stmt_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        for b in &f.barriers {
            st.execute(params![
                fid,
                base + b.span.line,
                b.span.col,
                b.kind.as_str(),
                b.barrier_id,
                b.thread_count,
                b.barrier_id_text,
                b.thread_count_text,
                b.stmt.0,
            ])?;
        }
    }
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO launches(caller_function_id, line, col, kernel_name, template_args, \
             grid_text, block_text, shmem_text, via_api) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        for l in &f.launches {
            st.execute(params![
                fid,
                base + l.span.line,
                l.span.col,
                l.kernel,
                l.template_args.join(","),
                l.grid_text,
                l.block_text,
                l.shmem_text,
                l.via_api,
            ])?;
        }
    }
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO calls(function_id, line, col, callee) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for c in &f.calls {
            st.execute(params![fid, base + c.span.line, c.span.col, c.callee])?;
        }
    }
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO diagnostics(file_id, function_id, line, col, severity, code, message) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for e in &f.syntax_errors {
            st.execute(params![
                file_id,
                fid,
                base + e.span.line,
                e.span.col,
                e.severity(),
                e.code,
                e.message
            ])?;
        }
    }
    Ok(())
}
