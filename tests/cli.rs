//! End-to-end tests of the `cudalog` binary.

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::Path;

fn cudalog() -> Command {
    Command::cargo_bin("cudalog").unwrap()
}

fn project(dir: &Path) {
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    std::fs::write(dir.join("inc/dims.cuh"), "#pragma once\n#define BS 128\n").unwrap();
    std::fs::write(
        dir.join("k.cu"),
        "#include \"inc/dims.cuh\"\n\
__global__ void scale(float* a, float s, int n) {\n\
  int i = blockIdx.x * BS + threadIdx.x;\n\
  if (i < n) a[i] *= s;\n\
}\n\
template <int B>\n\
__global__ void sum(const float* in, float* out) {\n\
  __shared__ float buf[B];\n\
  buf[threadIdx.x] = in[threadIdx.x];\n\
  __syncthreads();\n\
  if (threadIdx.x == 0) out[blockIdx.x] = buf[0];\n\
}\n\
void run(float* d, int n) {\n\
  scale<<<(n + BS - 1) / BS, BS>>>(d, 2.0f, n);\n\
  sum<BS><<<1, BS>>>(d, d);\n\
}\n",
    )
    .unwrap();
}

#[test]
fn index_then_query_csv_json_table() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    cudalog()
        .arg("index")
        .arg(dir.path())
        .assert()
        .success()
        .stdout(
            predicate::str::contains("2 kernels").and(predicate::str::contains("0 parse errors")),
        );
    let db = dir.path().join(".cudalog/cudalog.db");
    assert!(db.exists());
    cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .args([
            "--format",
            "csv",
            "SELECT name FROM functions WHERE kind='kernel' ORDER BY name",
        ])
        .assert()
        .success()
        .stdout("name\nscale\nsum\n");
    cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .args([
            "--format",
            "json",
            "SELECT kernel_name, template_args, grid_text, block_text FROM launches ORDER BY line",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("\"grid_text\": \"(n + BS - 1) / BS\"")
                .and(predicate::str::contains("\"template_args\": \"BS\"")),
        );
    cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .arg("SELECT array, space, is_write, elem_bytes FROM accesses ORDER BY id")
        .assert()
        .success()
        .stdout(
            predicate::str::contains("buf")
                .and(predicate::str::contains("shared"))
                .and(predicate::str::contains("rows)")),
        );
}

#[test]
fn query_refuses_writes_and_reports_bad_sql() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    cudalog().arg("index").arg(dir.path()).assert().success();
    let db = dir.path().join(".cudalog/cudalog.db");
    cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .arg("DELETE FROM functions")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("read-only"));
    cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .arg("SELECT nope FROM functions")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such column: nope"));
    // Nothing was deleted.
    cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .args(["--format", "csv", "SELECT count(*) AS n FROM functions"])
        .assert()
        .success()
        .stdout("n\n3\n");
}

#[test]
fn clear_errors_for_missing_inputs() {
    let dir = tempfile::tempdir().unwrap();
    cudalog()
        .arg("index")
        .arg(dir.path().join("nope"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such directory"));
    cudalog()
        .args(["query", "--db"])
        .arg(dir.path().join("none.db"))
        .arg("SELECT 1")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cudalog index"));
    std::fs::write(
        dir.path().join("cudalog.toml"),
        "[launch]\nblock = \"wide\"\n",
    )
    .unwrap();
    cudalog()
        .arg("index")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cudalog.toml").and(predicate::str::contains("line 2")));
}

#[test]
fn broken_and_non_utf8_files_are_diagnosed_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("broken.cu"),
        "int x = ;\n__global__ void ok(int* p) { p[threadIdx.x] = 1; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("latin1.cu"),
        b"// caf\xe9\n__global__ void l(int* p) { p[0] = 0; }\n",
    )
    .unwrap();
    cudalog().arg("index").arg(dir.path()).assert().success();
    let db = dir.path().join(".cudalog/cudalog.db");
    cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .args([
            "--format",
            "csv",
            "SELECT f.path, d.line, d.col, d.code FROM diagnostics d JOIN files f ON f.id = d.file_id ORDER BY f.path",
        ])
        .assert()
        .success()
        .stdout("path,line,col,code\nbroken.cu,1,7,parse-error\nlatin1.cu,1,7,encoding\n");
    cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .args([
            "--format",
            "csv",
            "SELECT name FROM functions ORDER BY name",
        ])
        .assert()
        .success()
        .stdout("name\nl\nok\n");
}

#[test]
fn reindex_is_incremental_and_removes_deleted_files() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    cudalog().arg("index").arg(dir.path()).assert().success();
    cudalog()
        .arg("index")
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "0 functions written, 0 moved, 3 unchanged",
        ));
    std::fs::remove_file(dir.path().join("k.cu")).unwrap();
    cudalog().arg("index").arg(dir.path()).assert().success();
    cudalog()
        .args(["query", "--db"])
        .arg(dir.path().join(".cudalog/cudalog.db"))
        .args(["--format", "csv", "SELECT (SELECT count(*) FROM files WHERE path = 'k.cu') + (SELECT count(*) FROM functions) + (SELECT count(*) FROM accesses) AS n"])
        .assert()
        .success()
        .stdout("n\n0\n");
}

/// The example workspace indexes cleanly, and every access-based finding
/// recorded in EXPECTED.md points at an access the index really has (so the
/// expectations stay in step with the sources).
#[test]
fn workspace_example_matches_its_expectations_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace-example");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("ws.db");
    cudalog()
        .arg("index")
        .arg(&root)
        .arg("--db")
        .arg(&db)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("21 kernels").and(predicate::str::contains("0 parse errors")),
        );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let expected = std::fs::read_to_string(root.join("EXPECTED.md")).unwrap();
    let mut checked = 0;
    for line in expected.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | file | line | col | kernel | rule | severity | why |
        if cells.len() < 8 || !cells[1].ends_with(".cu") {
            continue;
        }
        let (file, ln, col, kernel, rule) = (cells[1], cells[2], cells[3], cells[4], cells[5]);
        let is_kernel: i64 = conn
            .query_row(
                "SELECT count(*) FROM functions fn JOIN files f ON f.id = fn.file_id \
                 WHERE f.path = ?1 AND fn.name = ?2 AND fn.kind IN ('kernel', 'device')",
                [file, kernel],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(is_kernel, 1, "{file}: kernel or device function {kernel}");
        let table = match rule {
            "uncoalesced-global" | "misaligned-global" | "shared-bank-conflict" | "data-race" => {
                "accesses"
            }
            // A barrier, or a call to a device function holding one.
            "barrier-divergence" | "named-barrier-misuse" => {
                "(SELECT function_id, line, col FROM barriers \
                  UNION ALL SELECT function_id, line, col FROM calls)"
            }
            _ => continue,
        };
        let n: i64 = conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM {table} x JOIN functions fn ON fn.id = x.function_id \
                     JOIN files f ON f.id = fn.file_id WHERE f.path = ?1 AND x.line = ?2 AND x.col = ?3"
                ),
                [file, ln, col],
                |r| r.get(0),
            )
            .unwrap();
        assert!(
            n > 0,
            "EXPECTED.md: no {table} row at {file}:{ln}:{col} ({rule})"
        );
        checked += 1;
    }
    assert!(checked >= 12, "only {checked} expectations checked");
}
