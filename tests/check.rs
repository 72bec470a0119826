//! `cudalog check`: findings on the example workspace against EXPECTED.md,
//! output formats, suppressions, exit status, the findings table.

use assert_cmd::Command;
use predicates::prelude::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn cudalog() -> Command {
    Command::cargo_bin("cudalog").unwrap()
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace-example")
}

/// Rules `cudalog check` implements today; EXPECTED.md rows of these rules
/// must match the findings exactly.
fn implemented_rules() -> BTreeSet<String> {
    cudalog::check::RULES
        .iter()
        .map(|r| r.id.to_string())
        .collect()
}

fn expected(rules: &BTreeSet<String>) -> BTreeSet<(String, u32, u32, String, String)> {
    let text = std::fs::read_to_string(example().join("EXPECTED.md")).unwrap();
    let mut out = BTreeSet::new();
    let mut in_builtin = false;
    for line in text.lines() {
        if line.starts_with("## ") {
            in_builtin = line.contains("built-in analyses");
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if !in_builtin || cells.len() < 8 || !cells[1].ends_with(".cu") {
            continue;
        }
        if rules.contains(cells[5]) {
            out.insert((
                cells[1].to_string(),
                cells[2].parse().unwrap(),
                cells[3].parse().unwrap(),
                cells[5].to_string(),
                cells[6].to_string(),
            ));
        }
    }
    out
}

#[test]
fn example_findings_match_expected_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let out = cudalog()
        .arg("check")
        .arg(example())
        .arg("--db")
        .arg(tmp.path().join("c.db"))
        .args(["--format", "json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let found: Vec<serde_json::Value> = serde_json::from_slice(&out).unwrap();
    let got: BTreeSet<_> = found
        .iter()
        .map(|f| {
            (
                f["file"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap() as u32,
                f["col"].as_u64().unwrap() as u32,
                f["rule"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let rules = implemented_rules();
    // House-rule findings are asserted by tests/house_rules.rs.
    let got: BTreeSet<_> = got.into_iter().filter(|f| rules.contains(&f.3)).collect();
    let want = expected(&rules);
    assert!(!want.is_empty());
    assert_eq!(
        got, want,
        "findings differ from EXPECTED.md for rules {rules:?}"
    );
    for f in &found {
        assert!(f["function"].is_string() && f["message"].is_string() && f["facts"].is_object());
    }
}

#[test]
fn sarif_output_is_valid_sarif_2_1_0() {
    let tmp = tempfile::tempdir().unwrap();
    let out = cudalog()
        .arg("check")
        .arg(example())
        .arg("--db")
        .arg(tmp.path().join("c.db"))
        .args(["--format", "sarif"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let doc: serde_sarif::sarif::Sarif =
        serde_json::from_slice(&out).expect("deserialises as SARIF");
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["version"], "2.1.0");
    assert_eq!(doc.runs.len(), 1);
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for r in results {
        let loc = &r["locations"][0]["physicalLocation"];
        assert!(
            loc["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
                .ends_with(".cu")
        );
        assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1);
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(
            v["runs"][0]["tool"]["driver"]["rules"][idx]["id"],
            r["ruleId"]
        );
    }
}

const BARRIER_BUG: &str = concat!(
    "__global__ void k(float* d, int n) {\n",
    "  __shared__ float s[128];\n",
    "  if (threadIdx.x < n) {\n",
    "    s[threadIdx.x] = d[threadIdx.x];\n",
    "    __syncthreads();\n",
    "  }\n",
    "}\n",
);

#[test]
fn human_output_exit_status_suppression_and_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), BARRIER_BUG).unwrap();
    cudalog()
        .arg("check")
        .arg(dir.path())
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("error[barrier-divergence]")
                .and(predicate::str::contains("--> k.cu:5:5"))
                .and(predicate::str::contains("^^^^^^^^^^^^^^^"))
                .and(predicate::str::contains("1 error(s)")),
        );
    cudalog()
        .args(["query", "--db"])
        .arg(dir.path().join(".cudalog/cudalog.db"))
        .args([
            "--format",
            "csv",
            "SELECT rule, severity, file, line, col, suppressed FROM findings WHERE rule = 'barrier-divergence'",
        ])
        .assert()
        .success()
        .stdout("rule,severity,file,line,col,suppressed\nbarrier-divergence,error,k.cu,5,5,0\n");
    // Suppressed: exit 0, reported as suppressed, still in the table.
    let suppressed = BARRIER_BUG.replace(
        "    __syncthreads();",
        "    // cudalog-ignore: barrier-divergence\n    __syncthreads();",
    );
    std::fs::write(dir.path().join("k.cu"), suppressed).unwrap();
    cudalog()
        .arg("check")
        .arg(dir.path())
        .assert()
        .success()
        .stdout(
            predicate::str::contains("0 error(s)").and(predicate::str::contains("1 suppressed")),
        );
    cudalog()
        .args(["query", "--db"])
        .arg(dir.path().join(".cudalog/cudalog.db"))
        .args([
            "--format",
            "csv",
            "SELECT line, suppressed FROM findings WHERE rule = 'barrier-divergence'",
        ])
        .assert()
        .success()
        .stdout("line,suppressed\n6,1\n");
}

#[test]
fn fail_on_threshold_and_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ok.cu"),
        "__global__ void __launch_bounds__(256) k(float* d) { __syncthreads(); d[threadIdx.x] = 0; }\n",
    )
    .unwrap();
    cudalog()
        .arg("check")
        .arg(dir.path())
        .args(["--fail-on", "note"])
        .assert()
        .success();
    cudalog()
        .arg("check")
        .arg(dir.path())
        .args(["--fail-on", "fatal"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown severity"));
    cudalog()
        .arg("check")
        .arg(dir.path().join("missing"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such directory"));
}

#[test]
fn derived_facts_are_queryable_and_written_incrementally() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("c.db");
    cudalog()
        .arg("check")
        .arg(example())
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1);
    let q = |sql: &str| -> String {
        let out = cudalog()
            .args(["query", "--db"])
            .arg(&db)
            .args(["--format", "csv", sql])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let facts_of = |fname: &str, cols: &str, filter: &str| {
        q(&format!(
            "SELECT {cols} FROM access_facts a JOIN functions fn ON fn.id = a.function_id \
             WHERE fn.name = '{fname}' {filter} ORDER BY a.access_index"
        ))
    };
    assert_eq!(
        facts_of(
            "transpose_tiled",
            "a.line, a.bank_degree",
            "AND a.array = 'tile'"
        ),
        "line,bank_degree\n19,1\n26,32\n"
    );
    assert_eq!(
        facts_of(
            "transpose_padded",
            "a.line, a.bank_degree",
            "AND a.array = 'tile'"
        ),
        "line,bank_degree\n35,1\n42,1\n"
    );
    assert_eq!(
        facts_of(
            "stride_two",
            "a.array, a.stride_x, a.sectors_kind, a.sectors, a.min_sectors",
            ""
        ),
        "array,stride_x,sectors_kind,sectors,min_sectors\nin,2,exact,8,4\nout,1,exact,4,4\n"
    );
    assert_eq!(
        facts_of(
            "gather",
            "a.array, a.data_dependent, a.sectors_kind",
            "AND a.array = 'in'"
        ),
        "array,data_dependent,sectors_kind\nin,1,data_dependent\n"
    );
    assert_eq!(
        q(
            "SELECT v.name, v.depends_x, v.depends_y, v.uniformity FROM var_facts v JOIN functions fn ON fn.id = v.function_id \
           WHERE fn.name = 'transpose_naive' AND v.name IN ('x', 'y', 'width') ORDER BY v.var_index"
        ),
        "name,depends_x,depends_y,uniformity\nwidth,0,0,block\nx,1,0,thread\ny,0,1,warp\n"
    );
    assert_eq!(
        q(
            "SELECT b.line, b.kind FROM branch_facts b JOIN functions fn ON fn.id = b.function_id \
           WHERE fn.name = 'reduce_sequential' ORDER BY b.line, b.col"
        ),
        "line,kind\n26,boundary_guard\n28,uniform\n29,divergent\n34,single_thread\n"
    );
}

#[test]
fn happens_before_is_queryable_for_the_race_checks() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("c.db");
    cudalog()
        .arg("check")
        .arg(example())
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1);
    // In neighbour_race the write s[t] (line 30) and the read s[t + 1]
    // (line 31) share an interval; in neighbour_synced the barrier orders them.
    let sql = |kernel: &str| {
        format!(
            "SELECT DISTINCT o.ordered FROM stmt_order o JOIN functions fn ON fn.id = o.function_id \
             JOIN accesses w ON w.function_id = fn.id AND w.stmt_id = o.from_stmt AND w.array = 's' AND w.is_write \
             JOIN accesses r ON r.function_id = fn.id AND r.stmt_id = o.to_stmt AND r.array = 's' AND NOT r.is_write \
             WHERE fn.name = '{kernel}' AND r.index_text = '[t + 1]' AND w.index_text = '[t]'"
        )
    };
    cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .args(["--format", "csv", &sql("neighbour_race")])
        .assert()
        .success()
        .stdout("ordered\n0\n");
    cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .args(["--format", "csv", &sql("neighbour_synced")])
        .assert()
        .success()
        .stdout("ordered\n1\n");
}
