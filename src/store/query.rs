//! Read-only SQL queries with table/CSV/JSON rendering.

use anyhow::{Result, bail};
use rusqlite::Connection;
use rusqlite::types::ValueRef;

/// Rows returned by a query, as display strings plus JSON values.
pub struct QueryResult {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows of JSON values (null, number, string).
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// Run one SQL statement on a (read-only) connection.
pub fn run_query(conn: &Connection, sql: &str) -> Result<QueryResult> {
    let mut stmt = match conn.prepare(sql) {
        Ok(s) => s,
        Err(e) => bail!("{}", describe_sql_error(&e, sql)),
    };
    if !stmt.readonly() {
        bail!("only read-only queries are allowed: this statement would modify the database");
    }
    let columns: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    let n = columns.len();
    let mut rows = Vec::new();
    let mut q = stmt.query([])?;
    loop {
        let row = match q.next() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => bail!("{}", describe_sql_error(&e, sql)),
        };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            out.push(match row.get_ref(i)? {
                ValueRef::Null => serde_json::Value::Null,
                ValueRef::Integer(v) => serde_json::Value::from(v),
                ValueRef::Real(v) => serde_json::Value::from(v),
                ValueRef::Text(t) => {
                    serde_json::Value::from(String::from_utf8_lossy(t).into_owned())
                }
                ValueRef::Blob(b) => serde_json::Value::from(format!("<{} bytes>", b.len())),
            });
        }
        rows.push(out);
    }
    Ok(QueryResult { columns, rows })
}

fn describe_sql_error(e: &rusqlite::Error, sql: &str) -> String {
    if let rusqlite::Error::SqlInputError { msg, offset, .. } = e {
        let off = (*offset).max(0) as usize;
        return format!(
            "SQL error at offset {off}: {msg}\n  {sql}\n  {}^",
            " ".repeat(off.min(sql.len()))
        );
    }
    let msg = e.to_string();
    if msg.contains("readonly") || msg.contains("read-only") || msg.contains("query_only") {
        return "only read-only queries are allowed: this statement would modify the database"
            .into();
    }
    format!("SQL error: {msg}")
}

fn cell_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl QueryResult {
    /// Render as an aligned text table.
    pub fn to_table(&self) -> String {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(cell_text).collect())
            .collect();
        for r in &cells {
            for (i, c) in r.iter().enumerate() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |vals: &[String], out: &mut String| {
            let parts: Vec<String> = vals
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{:<w$}", v, w = widths[i]))
                .collect();
            out.push_str(parts.join(" | ").trim_end());
            out.push('\n');
        };
        line(&self.columns, &mut out);
        let sep: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&sep.join("-+-"));
        out.push('\n');
        for r in &cells {
            line(r, &mut out);
        }
        out.push_str(&format!(
            "({} row{})\n",
            cells.len(),
            if cells.len() == 1 { "" } else { "s" }
        ));
        out
    }

    /// Render as CSV (RFC 4180 quoting) with a header row.
    pub fn to_csv(&self) -> String {
        let esc = |s: &str| {
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let mut out = String::new();
        out.push_str(
            &self
                .columns
                .iter()
                .map(|c| esc(c))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push('\n');
        for r in &self.rows {
            out.push_str(
                &r.iter()
                    .map(|v| esc(&cell_text(v)))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            out.push('\n');
        }
        out
    }

    /// Render as a JSON array of objects.
    pub fn to_json(&self) -> String {
        let arr: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut m = serde_json::Map::new();
                for (c, v) in self.columns.iter().zip(r) {
                    m.insert(c.clone(), v.clone());
                }
                serde_json::Value::Object(m)
            })
            .collect();
        serde_json::to_string_pretty(&arr).unwrap_or_else(|_| "[]".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x,y'), (NULL, 'q\"');",
        )
        .unwrap();
        c
    }

    #[test]
    fn renders_csv_json_table() {
        let r = run_query(&conn(), "SELECT a, b FROM t ORDER BY rowid").unwrap();
        assert_eq!(r.to_csv(), "a,b\n1,\"x,y\"\n,\"q\"\"\"\n");
        assert!(r.to_json().contains("\"a\": null"));
        assert!(r.to_table().contains("(2 rows)"));
    }

    #[test]
    fn refuses_writes_and_reports_bad_sql() {
        let c = conn();
        let e = run_query(&c, "DELETE FROM t").err().unwrap().to_string();
        assert!(e.contains("read-only"), "{e}");
        let e = run_query(&c, "SELEC 1").err().unwrap().to_string();
        assert!(e.contains("SQL error"), "{e}");
        let e = run_query(&c, "SELECT nope FROM t")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("nope"), "{e}");
    }
}
