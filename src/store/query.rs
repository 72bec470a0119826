//! Read-only SQL queries with table/CSV/JSON rendering.
//!
//! [`stream_query`] writes rows as SQLite produces them (memory stays flat
//! even for an endless result such as a recursive CTE), stops after
//! `limit` rows, and interrupts the statement at its `timeout`.
//! [`run_query`] collects a whole result (tests, small queries).

use anyhow::{Result, bail};
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use std::io::Write;
use std::time::Duration;

/// Output formats of [`stream_query`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryFormat {
    /// Aligned text table (widths from the first rows; control characters
    /// escaped).
    Table,
    /// CSV with a header row.
    Csv,
    /// JSON array of objects.
    Json,
}

/// Bounds of one [`stream_query`].
#[derive(Clone, Copy, Debug, Default)]
pub struct QueryBounds {
    /// Stop after this many rows.
    pub limit: Option<u64>,
    /// Interrupt the statement after this long.
    pub timeout: Option<Duration>,
}

/// Rows a table buffers to choose its column widths; later rows are
/// printed as they come (a longer cell widens only its own line).
const TABLE_WIDTH_ROWS: usize = 200;

/// Rows returned by a query, as display strings plus JSON values.
pub struct QueryResult {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows of JSON values (null, number, string).
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// Run one SQL statement on a (read-only) connection, collecting every row.
pub fn run_query(conn: &Connection, sql: &str) -> Result<QueryResult> {
    let mut columns = Vec::new();
    let mut rows = Vec::new();
    for_each_row(conn, sql, QueryBounds::default(), &mut |cols, row| {
        if columns.is_empty() {
            columns = cols.to_vec();
        }
        if let Some(r) = row {
            rows.push(r);
        }
        Ok(())
    })?;
    Ok(QueryResult { columns, rows })
}

/// Run one SQL statement, writing its rows to `out` in `format` as they
/// come; returns how many rows were written. An error writing to `out`
/// (such as a closed pipe) is returned as the `std::io::Error` it is.
pub fn stream_query(
    conn: &Connection,
    sql: &str,
    format: QueryFormat,
    bounds: QueryBounds,
    out: &mut dyn Write,
) -> Result<u64> {
    let mut w = RowWriter {
        format,
        out,
        columns: Vec::new(),
        pending: Vec::new(),
        widths: None,
        rows: 0,
    };
    let result = for_each_row(conn, sql, bounds, &mut |cols, row| {
        if w.columns.is_empty() && !cols.is_empty() {
            w.columns = cols.to_vec();
            w.start()?;
        }
        match row {
            Some(r) => w.row(r),
            None => Ok(()),
        }
    });
    // Whatever was printed is closed properly, also after an interrupt.
    w.finish(result.is_err())?;
    result?;
    Ok(w.rows)
}

/// Receives the column names with no row, then each row.
type RowSink<'a> = dyn FnMut(&[String], Option<Vec<serde_json::Value>>) -> Result<()> + 'a;

/// Call `f` once with the columns and no row (before any row), then with
/// every row, within `bounds`.
fn for_each_row(
    conn: &Connection,
    sql: &str,
    bounds: QueryBounds,
    f: &mut RowSink<'_>,
) -> Result<()> {
    let mut stmt = match conn.prepare(sql) {
        Ok(s) => s,
        Err(e) => bail!("{}", describe_sql_error(&e, sql)),
    };
    if !stmt.readonly() {
        bail!("only read-only queries are allowed: this statement would modify the database");
    }
    let columns: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    let n = columns.len();
    f(&columns, None)?;
    // The timeout: a timer thread interrupts the statement (SQLite checks
    // between steps of its virtual machine, so even one long step ends).
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let timer = bounds.timeout.map(|t| {
        let handle = conn.get_interrupt_handle();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(t) {
                handle.interrupt();
            }
        })
    });
    let result = (|| -> Result<()> {
        let mut q = stmt.query([])?;
        let mut count = 0u64;
        loop {
            if bounds.limit.is_some_and(|l| count >= l) {
                return Ok(());
            }
            let row = match q.next() {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(()),
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::OperationInterrupted =>
                {
                    bail!(
                        "query stopped by --timeout after {:.1} s ({count} row{} printed)",
                        bounds.timeout.unwrap_or_default().as_secs_f64(),
                        if count == 1 { "" } else { "s" }
                    )
                }
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
            count += 1;
            f(&columns, Some(out))?;
        }
    })();
    drop(stop);
    if let Some(t) = timer {
        let _ = t.join();
    }
    result
}

struct RowWriter<'a> {
    format: QueryFormat,
    out: &'a mut dyn Write,
    columns: Vec<String>,
    /// Table rows held back until the widths are chosen.
    pending: Vec<Vec<String>>,
    widths: Option<Vec<usize>>,
    rows: u64,
}

fn csv_escape(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl RowWriter<'_> {
    fn start(&mut self) -> Result<()> {
        match self.format {
            QueryFormat::Csv => {
                let h: Vec<String> = self.columns.iter().map(|c| csv_escape(c)).collect();
                writeln!(self.out, "{}", h.join(","))?;
            }
            QueryFormat::Json => write!(self.out, "[")?,
            QueryFormat::Table => {}
        }
        Ok(())
    }

    fn row(&mut self, r: Vec<serde_json::Value>) -> Result<()> {
        match self.format {
            QueryFormat::Csv => {
                let cells: Vec<String> = r.iter().map(|v| csv_escape(&cell_text(v))).collect();
                writeln!(self.out, "{}", cells.join(","))?;
            }
            QueryFormat::Json => {
                let mut m = serde_json::Map::new();
                for (c, v) in self.columns.iter().zip(r) {
                    m.insert(c.clone(), v);
                }
                let sep = if self.rows == 0 { "\n" } else { ",\n" };
                let obj = serde_json::to_string_pretty(&serde_json::Value::Object(m))?;
                write!(self.out, "{sep}  {}", obj.replace('\n', "\n  "))?;
            }
            QueryFormat::Table => {
                let cells: Vec<String> = r
                    .iter()
                    .map(|v| crate::report::escape_control(&cell_text(v)).into_owned())
                    .collect();
                if self.widths.is_none() {
                    self.pending.push(cells);
                    if self.pending.len() >= TABLE_WIDTH_ROWS {
                        self.flush_table()?;
                    }
                } else {
                    self.table_line(&cells)?;
                }
            }
        }
        self.rows += 1;
        Ok(())
    }

    fn flush_table(&mut self) -> Result<()> {
        let header: Vec<String> = self
            .columns
            .iter()
            .map(|c| crate::report::escape_control(c).into_owned())
            .collect();
        let mut widths: Vec<usize> = header.iter().map(|c| c.chars().count()).collect();
        for r in &self.pending {
            for (i, c) in r.iter().enumerate() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        self.widths = Some(widths.clone());
        self.table_line(&header)?;
        let sep: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        writeln!(self.out, "{}", sep.join("-+-"))?;
        for r in std::mem::take(&mut self.pending) {
            self.table_line(&r)?;
        }
        Ok(())
    }

    fn table_line(&mut self, vals: &[String]) -> Result<()> {
        let widths = self.widths.as_deref().unwrap_or_default();
        let parts: Vec<String> = vals
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:<w$}", v, w = widths.get(i).copied().unwrap_or(0)))
            .collect();
        writeln!(self.out, "{}", parts.join(" | ").trim_end())?;
        Ok(())
    }

    fn finish(&mut self, failed: bool) -> Result<()> {
        if self.columns.is_empty() {
            // The statement was refused: nothing was started.
            return Ok(());
        }
        match self.format {
            QueryFormat::Csv => {}
            QueryFormat::Json => {
                writeln!(self.out, "{}]", if self.rows > 0 { "\n" } else { "" })?;
            }
            QueryFormat::Table => {
                if self.widths.is_none() && !self.columns.is_empty() {
                    self.flush_table()?;
                }
                if !failed {
                    writeln!(
                        self.out,
                        "({} row{})",
                        self.rows,
                        if self.rows == 1 { "" } else { "s" }
                    )?;
                }
            }
        }
        self.out.flush()?;
        Ok(())
    }
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

    fn streamed(sql: &str, format: QueryFormat, bounds: QueryBounds) -> Result<String> {
        let mut out = Vec::new();
        stream_query(&conn(), sql, format, bounds, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn streaming_matches_collected_output() {
        let sql = "SELECT a, b FROM t ORDER BY rowid";
        let r = run_query(&conn(), sql).unwrap();
        let b = QueryBounds::default();
        assert_eq!(streamed(sql, QueryFormat::Csv, b).unwrap(), r.to_csv());
        assert_eq!(streamed(sql, QueryFormat::Table, b).unwrap(), r.to_table());
        let j: serde_json::Value =
            serde_json::from_str(&streamed(sql, QueryFormat::Json, b).unwrap()).unwrap();
        let want: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(j, want);
        let empty = streamed("SELECT a FROM t WHERE 0", QueryFormat::Json, b).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&empty).unwrap(),
            serde_json::json!([])
        );
    }

    const ENDLESS: &str =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n";

    #[test]
    fn endless_results_stop_at_the_limit_or_the_timeout() {
        let b = QueryBounds {
            limit: Some(3),
            timeout: None,
        };
        assert_eq!(
            streamed(ENDLESS, QueryFormat::Csv, b).unwrap(),
            "i\n1\n2\n3\n"
        );
        // Rows go to a sink that discards them: the statement runs until
        // the timeout interrupts it.
        let b = QueryBounds {
            limit: None,
            timeout: Some(Duration::from_millis(200)),
        };
        let start = std::time::Instant::now();
        let e = stream_query(&conn(), ENDLESS, QueryFormat::Csv, b, &mut std::io::sink())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--timeout"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(10));
        // A statement that produces no row for a long time is interrupted too.
        let slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
                    SELECT count(*) FROM n";
        let e = stream_query(&conn(), slow, QueryFormat::Table, b, &mut std::io::sink())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--timeout"), "{e}");
    }

    #[test]
    fn a_closed_output_is_an_io_error() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let b = QueryBounds::default();
        let e = stream_query(&conn(), ENDLESS, QueryFormat::Csv, b, &mut Closed).unwrap_err();
        let io = e.downcast_ref::<std::io::Error>().expect("an io error");
        assert_eq!(io.kind(), std::io::ErrorKind::BrokenPipe);
    }
}
