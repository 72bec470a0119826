//! Several processes on one database: concurrent `index` runs, and `query`
//! while `watch` writes; the real watch loop (file events, Ctrl-C).

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cudalog");
const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/workspace-example");

fn copy_example(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(EXAMPLE).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The dump of a fresh `cudalog index` of `root` into a new database
/// (the same executable, so the engine fingerprints agree).
fn fresh(root: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fresh.db");
    let out = Command::new(BIN)
        .arg("index")
        .arg(root)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::dump(&rusqlite::Connection::open(&db).unwrap())
}

fn stored(root: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let c = rusqlite::Connection::open(root.join(".cudalog/cudalog.db")).unwrap();
    common::dump(&c)
}

#[test]
fn concurrent_index_runs_on_one_directory_both_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_example(&root);
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(BIN)
                .arg("index")
                .arg(&root)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    common::assert_same(&fresh(&root), &stored(&root), "concurrent index");
}

/// Lines of a child's stdout, as they come.
fn lines(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

/// Wait for a JSON line whose `event` is `event`.
fn wait_for(rx: &mpsc::Receiver<String>, event: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no `{event}` line within 60 s"));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["event"] == event {
            return v;
        }
    }
}

fn toggle_text(three: bool) -> String {
    let n = if three { 3 } else { 1 };
    (0..n)
        .map(|i| {
            format!(
                "__global__ void tog_{i}(float* a) {{ a[threadIdx.x * {}] = 0; }}\n",
                i + 1
            )
        })
        .collect()
}

#[test]
fn watch_applies_file_events_while_queries_see_whole_batches_and_stops_on_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_example(&root);
    std::fs::write(root.join("toggle.cu"), toggle_text(false)).unwrap();
    let mut child = Command::new(BIN)
        .args(["watch", "--format", "json", "--debounce-ms", "30"])
        .arg(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = lines(&mut child);
    let ready = wait_for(&rx, "ready");
    assert!(ready["functions"].as_u64().unwrap() > 0, "{ready}");

    // One edit reaches the database as one batch.
    std::fs::write(root.join("toggle.cu"), toggle_text(true)).unwrap();
    let b = wait_for(&rx, "batch");
    assert_eq!(b["files_changed"], 1, "{b}");
    assert_eq!(b["functions_rederived"], 2, "two kernels were added: {b}");

    // Queries while the file flips between one and three kernels: every
    // snapshot is a whole batch (never 0 or 2 functions in the file), and
    // no query fails on the writer's lock.
    let db = root.join(".cudalog/cudalog.db");
    let sql = "SELECT COUNT(*) AS n FROM functions fn JOIN files f ON f.id = fn.file_id WHERE f.path = 'toggle.cu'";
    // Each save is atomic (temporary file, then rename), as editors do: a
    // plain write can be seen empty between its truncation and its bytes.
    for i in 0..20 {
        let tmp = root.join(".toggle.cu.swp");
        std::fs::write(&tmp, toggle_text(i % 2 == 1)).unwrap();
        std::fs::rename(&tmp, root.join("toggle.cu")).unwrap();
        let out = Command::new(BIN)
            .args(["query", "--format", "csv", "--db"])
            .arg(&db)
            .arg(sql)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let n = text.lines().nth(1).unwrap_or("").trim().to_string();
        assert!(n == "1" || n == "3", "a partial batch is visible: {n}");
        std::thread::sleep(Duration::from_millis(15));
    }
    // Let the last edit land (the file ends with three kernels).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let c = rusqlite::Connection::open(&db).unwrap();
        let n: i64 = c.query_row(sql, [], |r| r.get(0)).unwrap();
        if n == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "the last edit never landed");
        std::thread::sleep(Duration::from_millis(50));
    }

    // Ctrl-C: a clean exit, and the database equals a fresh check.
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "watch exit: {:?}", out.status);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stopped"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::assert_same(&fresh(&root), &stored(&root), "after watch");
}
