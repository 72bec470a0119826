//! Reading the findings back (what `check` prints is what the store holds).

use crate::check::{Finding, Severity};
use anyhow::Result;
use rusqlite::Connection;

/// Every finding in the store, ordered by file, line, column and rule.
pub fn load_findings(conn: &Connection) -> Result<Vec<Finding>> {
    let mut st = conn.prepare(
        "SELECT fd.rule, fd.severity, fd.file, fd.line, fd.col, fd.end_col, \
         COALESCE(fn.name, ''), COALESCE(fn.key, ''), fd.message, fd.facts, fd.suppressed \
         FROM findings fd LEFT JOIN functions fn ON fn.id = fd.function_id \
         ORDER BY fd.file, fd.line, fd.col, fd.rule",
    )?;
    let rows = st.query_map([], |r| {
        let severity: String = r.get(1)?;
        let col: u32 = r.get(4)?;
        let facts: Option<String> = r.get(9)?;
        Ok(Finding {
            rule: r.get(0)?,
            severity: severity.parse().unwrap_or(Severity::Warning),
            file: r.get(2)?,
            line: r.get(3)?,
            col,
            end_col: r.get::<_, Option<u32>>(5)?.unwrap_or(col + 1),
            function: r.get(6)?,
            function_key: r.get(7)?,
            message: r.get(8)?,
            facts: facts
                .and_then(|f| serde_json::from_str(&f).ok())
                .unwrap_or(serde_json::Value::Null),
            suppressed: r.get(10)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}
