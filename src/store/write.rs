//! Incremental writes, inside one `BEGIN IMMEDIATE` transaction: per file,
//! and per function by content hash (its own rows) and results hash (its
//! derived facts and findings).

use crate::check::Finding;
use crate::db::FunctionFacts;
use crate::facts::Analysis;
use crate::frontend::SourceDiagnostic;
use crate::ir::Function;
use anyhow::Result;
use rusqlite::{OptionalExtension, params};

/// A write transaction on the store (see [`super::Store::transaction`]).
/// Dropped without [`StoreTx::commit`], it rolls back.
pub struct StoreTx<'a> {
    pub(super) tx: rusqlite::Transaction<'a>,
}

/// One file's own row.
#[derive(Clone, Debug)]
pub struct FileRow {
    /// Stored path (see [`super::path_key`]).
    pub path: String,
    /// blake3 of the bytes.
    pub content_hash: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Parse-error diagnostics in the file (inside functions too).
    pub parse_errors: u64,
    /// Diagnostics outside functions.
    pub diagnostics: Vec<SourceDiagnostic>,
}

/// The derived-fact tables, rewritten per function.
const FACT_TABLES: &[&str] = &[
    "var_facts",
    "access_facts",
    "branch_facts",
    "barrier_intervals",
    "stmt_order",
    "param_facts",
    "findings",
    "bounds",
];

impl<'a> StoreTx<'a> {
    pub(super) fn new(tx: rusqlite::Transaction<'a>) -> Self {
        StoreTx { tx }
    }

    /// The underlying transaction (tests and reports).
    pub fn connection(&self) -> &rusqlite::Connection {
        &self.tx
    }

    /// Commit everything written.
    pub fn commit(self) -> Result<()> {
        self.tx.commit()?;
        Ok(())
    }

    /// Set a `cache_meta` entry.
    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.tx.execute(
            "INSERT INTO cache_meta(key, value) VALUES (?1, ?2) \
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    /// Insert or update a file's row and file-level diagnostics; returns
    /// its id.
    pub fn upsert_file(&self, f: &FileRow) -> Result<i64> {
        let tx = &self.tx;
        let id: i64 = match tx
            .prepare_cached("SELECT id FROM files WHERE path = ?1")?
            .query_row([&f.path], |r| r.get(0))
            .optional()?
        {
            Some(id) => {
                tx.prepare_cached(
                    "UPDATE files SET content_hash = ?1, bytes = ?2, parse_errors = ?3 WHERE id = ?4",
                )?
                .execute(params![
                    f.content_hash,
                    f.bytes as i64,
                    f.parse_errors as i64,
                    id
                ])?;
                id
            }
            None => {
                tx.prepare_cached(
                    "INSERT INTO files(path, content_hash, bytes, parse_errors) VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![
                    f.path,
                    f.content_hash,
                    f.bytes as i64,
                    f.parse_errors as i64
                ])?;
                tx.last_insert_rowid()
            }
        };
        tx.prepare_cached("DELETE FROM diagnostics WHERE file_id = ?1 AND function_id IS NULL")?
            .execute([id])?;
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO diagnostics(file_id, function_id, line, col, severity, code, message) \
                 VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for d in &f.diagnostics {
                ins.execute(params![id, d.line, d.col, d.severity, d.code, d.message])?;
            }
        }
        Ok(id)
    }

    /// Insert or replace a file's cache row (its deps hash and symbols).
    pub fn set_file_cache(&self, file_id: i64, deps_hash: &str, symbols_json: &str) -> Result<()> {
        let symbols = super::packed::pack(symbols_json);
        self.tx
            .prepare_cached(
                "INSERT INTO file_cache(file_id, deps_hash, symbols) VALUES (?1, ?2, ?3) \
                 ON CONFLICT(file_id) DO UPDATE SET deps_hash = excluded.deps_hash, symbols = excluded.symbols",
            )?
            .execute(params![file_id, deps_hash, symbols])?;
        Ok(())
    }

    /// The id of the file stored at `path`.
    pub fn file_id(&self, path: &str) -> Result<Option<i64>> {
        Ok(self
            .tx
            .prepare_cached("SELECT id FROM files WHERE path = ?1")?
            .query_row([path], |r| r.get(0))
            .optional()?)
    }

    /// The id of the function `key` of the file stored at `path`.
    pub fn function_id(&self, path: &str, key: &str) -> Result<Option<i64>> {
        Ok(self
            .tx
            .prepare_cached(
                "SELECT fn.id FROM functions fn JOIN files f ON f.id = fn.file_id \
                 WHERE f.path = ?1 AND fn.key = ?2",
            )?
            .query_row([path, key], |r| r.get(0))
            .optional()?)
    }

    /// Delete a file and everything in it.
    pub fn delete_file(&self, id: i64) -> Result<()> {
        self.tx.execute("DELETE FROM files WHERE id = ?1", [id])?;
        Ok(())
    }

    /// Delete a function and every row about it.
    pub fn delete_function(&self, id: i64) -> Result<()> {
        self.tx
            .prepare_cached("DELETE FROM functions WHERE id = ?1")?
            .execute([id])?;
        Ok(())
    }

    /// Move a function's rows by `delta` lines (it moved, nothing else
    /// changed).
    pub fn shift_function(&self, id: i64, delta: i64) -> Result<()> {
        let tx = &self.tx;
        tx.execute(
            "UPDATE functions SET line = line + ?1, end_line = end_line + ?1 WHERE id = ?2",
            params![delta, id],
        )?;
        for table in [
            "accesses",
            "barriers",
            "calls",
            "diagnostics",
            "access_facts",
            "branch_facts",
            "findings",
        ] {
            tx.prepare_cached(&format!(
                "UPDATE {table} SET line = line + ?1 WHERE function_id = ?2"
            ))?
            .execute(params![delta, id])?;
        }
        tx.prepare_cached("UPDATE launches SET line = line + ?1 WHERE caller_function_id = ?2")?
            .execute(params![delta, id])?;
        // House-rule facts (issue 9, schema 006).
        crate::rules::facts::shift_rule_facts(tx, id, delta)?;
        Ok(())
    }

    /// Insert a function's own rows (IR-derived); returns its id.
    #[allow(clippy::too_many_arguments)]
    pub fn insert_function(
        &self,
        file_id: i64,
        key: &str,
        name: &str,
        qualified_name: &str,
        start_line: u32,
        start_col: u32,
        facts: &FunctionFacts,
    ) -> Result<i64> {
        insert_function(
            &self.tx,
            file_id,
            key,
            name,
            qualified_name,
            start_line,
            start_col,
            facts,
        )
    }

    /// Replace a function's derived facts and findings. `findings` are
    /// placed (absolute lines, file set); `bounds` are the kernel's
    /// `bounds` rows.
    #[allow(clippy::too_many_arguments)]
    pub fn write_results(
        &self,
        fid: i64,
        start_line: u32,
        function: &Function,
        analysis: &Analysis,
        findings: &[Finding],
        results_hash: &str,
        bounds: &[crate::db::BoundRow],
    ) -> Result<()> {
        for t in FACT_TABLES {
            self.tx
                .prepare_cached(&format!("DELETE FROM {t} WHERE function_id = ?1"))?
                .execute([fid])?;
        }
        super::facts::insert_fact_rows(&self.tx, fid, start_line + 1, function, analysis)?;
        self.insert_findings(fid, findings)?;
        let mut ins = self.tx.prepare_cached(
            "INSERT INTO bounds(function_id, metric, scope, expression, status, reason, solver_ms, facts_hash) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for b in bounds {
            ins.execute(params![
                fid,
                b.metric,
                b.scope,
                b.expression,
                b.status,
                b.reason,
                b.solver_us as f64 / 1000.0,
                results_hash
            ])?;
        }
        self.tx
            .prepare_cached("UPDATE functions SET facts_hash = ?1 WHERE id = ?2")?
            .execute(params![results_hash, fid])?;
        Ok(())
    }

    /// How many findings a function has.
    pub fn findings_of(&self, fid: i64) -> Result<usize> {
        let n: i64 = self
            .tx
            .prepare_cached("SELECT COUNT(*) FROM findings WHERE function_id = ?1")?
            .query_row([fid], |r| r.get(0))?;
        Ok(n as usize)
    }

    /// Replace a function's findings only (it moved and its messages name
    /// absolute lines).
    pub fn replace_findings(&self, fid: i64, findings: &[Finding]) -> Result<()> {
        self.tx
            .prepare_cached("DELETE FROM findings WHERE function_id = ?1")?
            .execute([fid])?;
        self.insert_findings(fid, findings)
    }

    fn insert_findings(&self, fid: i64, findings: &[Finding]) -> Result<()> {
        let mut ins = self.tx.prepare_cached(
            "INSERT INTO findings(rule, severity, file, line, col, function_id, message, suppressed, end_col, facts) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?;
        for f in findings {
            ins.execute(params![
                f.rule,
                f.severity.as_str(),
                f.file,
                f.line,
                f.col,
                fid,
                f.message,
                f.suppressed,
                f.end_col,
                f.facts.to_string(),
            ])?;
        }
        Ok(())
    }

    /// Insert or replace a function's cache row.
    pub fn upsert_function_cache(&self, fid: i64, c: &super::PackedCache) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO function_cache(function_id, inputs_hash, results_hash, summary_inputs_hash, summary, call_args) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT(function_id) DO UPDATE SET inputs_hash = excluded.inputs_hash, \
                 results_hash = excluded.results_hash, summary_inputs_hash = excluded.summary_inputs_hash, \
                 summary = excluded.summary, call_args = excluded.call_args",
            )?
            .execute(params![
                fid,
                c.inputs_hash,
                c.results_hash,
                c.summary_inputs_hash,
                c.summary,
                c.call_args
            ])?;
        Ok(())
    }
}

fn opt(v: Option<u64>) -> Option<i64> {
    v.map(|x| x as i64)
}

#[allow(clippy::too_many_arguments)]
fn insert_function(
    tx: &rusqlite::Transaction<'_>,
    file_id: i64,
    key: &str,
    name: &str,
    qualified_name: &str,
    start_line: u32,
    start_col: u32,
    facts: &FunctionFacts,
) -> Result<i64> {
    let f = &facts.function;
    let base = start_line + 1; // relative line 0 → absolute 1-based
    let tparams: Vec<&str> = f.template_params.iter().map(|p| p.name.as_str()).collect();
    tx.prepare_cached(
        "INSERT INTO functions(file_id, name, qualified_name, key, kind, line, end_line, col, \
         content_hash, template_params, launch_bounds, parse_errors) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        file_id,
        name,
        qualified_name,
        key,
        f.kind.as_str(),
        base,
        base + f.line_count,
        start_col + 1,
        facts.content_hash,
        tparams.join(","),
        f.launch_bounds,
        f.parse_error_count() as i64,
    ])?;
    let fid = tx.last_insert_rowid();
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO params(function_id, position, name, type, elem_bytes) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for p in &facts.params {
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
    // House-rule facts (issue 9, schema 006).
    crate::rules::facts::insert_rule_facts(tx, fid, start_line, &facts.rule_facts)?;
    Ok(fid)
}
