//! Writing the findings of a check run.

use super::Store;
use crate::check::Finding;
use anyhow::Result;
use rusqlite::{OptionalExtension, params};

impl Store {
    /// Replace all findings with `findings` (one transaction).
    pub fn replace_findings(&mut self, findings: &[Finding]) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM findings", [])?;
        {
            let mut fid = tx.prepare_cached(
                "SELECT fn.id FROM functions fn JOIN files f ON f.id = fn.file_id \
                 WHERE f.path = ?1 AND fn.key = ?2",
            )?;
            let mut ins = tx.prepare_cached(
                "INSERT INTO findings(rule, severity, file, line, col, function_id, message, suppressed) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for f in findings {
                let function_id: Option<i64> = fid
                    .query_row(params![f.file, f.function_key], |r| r.get(0))
                    .optional()?;
                ins.execute(params![
                    f.rule,
                    f.severity.as_str(),
                    f.file,
                    f.line,
                    f.col,
                    function_id,
                    f.message,
                    f.suppressed,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}
