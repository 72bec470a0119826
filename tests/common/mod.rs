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

/// Copy the files `tests/fixtures/REL…` into `dir`, each under its own file
/// name.
pub fn copy_fixtures(dir: &std::path::Path, rels: &[&str]) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for rel in rels {
        let src = root.join(rel);
        let name = src.file_name().expect("a fixture file");
        std::fs::copy(&src, dir.join(name))
            .unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
    }
}

/// Run `cudalog check DIR --format json` and return its findings; the run
/// must succeed (exit 0, or 1 for findings at the fail-on level).
pub fn check_json(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let out = assert_cmd::Command::cargo_bin("cudalog")
        .unwrap()
        .arg("check")
        .arg(dir)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Copy the fixtures `rels` into a fresh directory and check it.
pub fn check_fixtures(rels: &[&str]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    copy_fixtures(dir.path(), rels);
    check_json(dir.path())
}

/// The global-memory coalescing findings (`uncoalesced-global`,
/// `misaligned-global`) of one function in `check --format json` output.
pub fn global_in<'a>(all: &'a [serde_json::Value], function: &str) -> Vec<&'a serde_json::Value> {
    all.iter()
        .filter(|f| {
            f["function"] == function
                && (f["rule"] == "uncoalesced-global" || f["rule"] == "misaligned-global")
        })
        .collect()
}

/// The findings of rule `rule` in function `function` of `check --format
/// json` output.
pub fn rule_in<'a>(
    all: &'a [serde_json::Value],
    function: &str,
    rule: &str,
) -> Vec<&'a serde_json::Value> {
    all.iter()
        .filter(|f| f["rule"] == rule && f["function"] == function)
        .collect()
}

/// A finding's message text.
pub fn message(f: &serde_json::Value) -> &str {
    f["message"].as_str().unwrap_or_default()
}
