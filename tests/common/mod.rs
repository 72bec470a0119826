//! Helpers shared by the integration tests: a dump of every table of a
//! store with ids replaced by natural keys, so that two databases built by
//! different routes (fresh run, restart, watch batches) can be compared row
//! for row.

#![allow(dead_code)]

use rusqlite::Connection;
use std::collections::BTreeMap;

/// Every table of the store, as sorted rows of text, ids replaced by the
/// (file path, function key) they stand for.
pub fn dump(c: &Connection) -> BTreeMap<String, Vec<String>> {
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = BTreeMap::new();
    for t in tables {
        let cols: Vec<String> = c
            .prepare(&format!("PRAGMA table_info({t})"))
            .unwrap()
            .query_map([], |r| r.get::<_, String>(1))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let exprs: Vec<String> = cols
            .iter()
            // Row ids and solver times differ between equal databases.
            .filter(|c| c.as_str() != "id" && c.as_str() != "solver_ms")
            .map(|col| match col.as_str() {
                "file_id" => "IFNULL((SELECT path FROM files WHERE id = file_id), 'NULL')".to_string(),
                "function_id" | "caller_function_id" => format!(
                    "IFNULL((SELECT f.path || ':' || fn.key FROM functions fn JOIN files f ON f.id = fn.file_id WHERE fn.id = {col}), 'NULL')"
                ),
                other => format!("quote({other})"),
            })
            .collect();
        let sql = format!("SELECT {} FROM {t}", exprs.join(" || '|' || "));
        let sql = if exprs.is_empty() {
            format!("SELECT '' FROM {t}")
        } else {
            sql
        };
        let mut rows: Vec<String> = c
            .prepare(&sql)
            .unwrap()
            .query_map([], |r| r.get::<_, Option<String>>(0))
            .unwrap()
            .map(|r| r.unwrap().unwrap_or_default())
            .collect();
        rows.sort();
        out.insert(t, rows);
    }
    out
}

/// Assert two dumps are equal, naming the first table that differs and a
/// few of its differing rows.
pub fn assert_same(
    a: &BTreeMap<String, Vec<String>>,
    b: &BTreeMap<String, Vec<String>>,
    what: &str,
) {
    for (t, ra) in a {
        let rb = b.get(t).cloned().unwrap_or_default();
        if ra != &rb {
            let only_a: Vec<&String> = ra.iter().filter(|r| !rb.contains(r)).take(5).collect();
            let only_b: Vec<&String> = rb.iter().filter(|r| !ra.contains(r)).take(5).collect();
            panic!(
                "{what}: table {t} differs ({} vs {} rows)\n only in first: {only_a:#?}\n only in second: {only_b:#?}",
                ra.len(),
                rb.len()
            );
        }
    }
    assert_eq!(a.len(), b.len(), "{what}: different tables");
}
