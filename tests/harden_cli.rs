//! Issue 8 robustness, end to end: what reaches the terminal, query
//! streaming and bounds, closed pipes, read-only databases, and files that
//! cannot be read.

use assert_cmd::Command;
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn cudalog() -> Command {
    Command::cargo_bin("cudalog").unwrap()
}

const KERNEL: &str = "__global__ void k(float* a, int n) {\n  int i = threadIdx.x * 32;\n  a[i] = 1.0f;\n}\nvoid h(float* d) { k<<<4, 256>>>(d, 8); }\n";

fn indexed(dir: &Path) -> std::path::PathBuf {
    cudalog().arg("index").arg(dir).assert().success();
    dir.join(".cudalog/cudalog.db")
}

const ENDLESS: &str =
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n";

#[test]
fn query_limit_and_timeout_bound_endless_results() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), KERNEL).unwrap();
    let db = indexed(dir.path());
    let out = cudalog()
        .args(["query", "--format", "csv", "--limit", "3", "--db"])
        .arg(&db)
        .arg(ENDLESS)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "i\n1\n2\n3\n");
    let start = Instant::now();
    let out = cudalog()
        .args(["query", "--format", "csv", "--timeout", "0.5", "--db"])
        .arg(&db)
        .arg("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n")
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--timeout"), "{err}");
    cudalog()
        .args(["query", "--timeout", "-1", "--db"])
        .arg(&db)
        .arg("SELECT 1")
        .assert()
        .failure();
}

#[test]
fn a_closed_pipe_ends_the_program_quietly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), KERNEL).unwrap();
    let db = indexed(dir.path());
    let bin = assert_cmd::cargo::cargo_bin("cudalog");
    let mut child = std::process::Command::new(bin)
        .args(["query", "--format", "csv", "--db"])
        .arg(&db)
        .arg(ENDLESS)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read a little, then close our end (as `| head` does).
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = [0u8; 4096];
    stdout.read_exact(&mut buf).unwrap();
    drop(stdout);
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("error"),
        "stderr: {err}"
    );
}

#[test]
fn escape_sequences_in_sources_do_not_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    // The finding's line carries an escape sequence (in a comment) and so
    // does the file's name.
    let src = KERNEL.replace(
        "a[i] = 1.0f;",
        "a[i] = 1.0f; /* \x1b]0;owned\x07 \x1b[2J */",
    );
    std::fs::write(dir.path().join("k\x1b[31m.cu"), &src).unwrap();
    let out = cudalog().arg("check").arg(dir.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--> "), "no finding to print: {text}");
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    assert!(text.contains("\\x1B"), "{text}");
    // `query`'s table escapes too (paths and messages come from the files).
    let db = dir.path().join(".cudalog/cudalog.db");
    let out = cudalog()
        .args(["query", "--db"])
        .arg(&db)
        .arg("SELECT path FROM files")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains('\x1b') && text.contains("k\\x1B[31m.cu"),
        "{text:?}"
    );
}

#[cfg(unix)]
#[test]
fn a_read_only_database_directory_still_answers_select() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), KERNEL).unwrap();
    let db = indexed(dir.path());
    let store_dir = db.parent().unwrap().to_path_buf();
    // Leave only the database file (no -wal/-shm), then lock the directory.
    for e in std::fs::read_dir(&store_dir).unwrap().flatten() {
        if e.path() != db {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let mode = |m| std::fs::set_permissions(&store_dir, std::fs::Permissions::from_mode(m));
    mode(0o555).unwrap();
    let writable = std::fs::write(store_dir.join("probe"), "").is_ok();
    let out = cudalog()
        .args(["query", "--format", "csv", "--db"])
        .arg(&db)
        .arg("SELECT name FROM functions WHERE kind = 'kernel'")
        .output()
        .unwrap();
    mode(0o755).unwrap();
    if writable {
        eprintln!("skipped: directory permissions are not enforced for this user");
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "name\nk\n");
}

#[cfg(unix)]
#[test]
fn symlinked_and_unreadable_sources_are_indexed_or_diagnosed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(
        outside.path().join("real.cu"),
        KERNEL.replace("void k(", "void linked("),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path().join("real.cu"), r.join("link.cu")).unwrap();
    std::os::unix::fs::symlink(r.join("nowhere.cu"), r.join("dangling.cu")).unwrap();
    std::fs::write(r.join("ok.cu"), KERNEL).unwrap();
    std::fs::write(
        r.join("locked.cu"),
        KERNEL.replace("void k(", "void locked("),
    )
    .unwrap();
    std::fs::set_permissions(r.join("locked.cu"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let enforced = std::fs::read(r.join("locked.cu")).is_err();
    let out = cudalog().arg("index").arg(r).output().unwrap();
    std::fs::set_permissions(r.join("locked.cu"), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let q = |sql: &str| {
        let o = cudalog()
            .args(["query", "--format", "csv", "--db"])
            .arg(r.join(".cudalog/cudalog.db"))
            .arg(sql)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(
        q("SELECT name FROM functions WHERE kind = 'kernel' ORDER BY name"),
        if enforced {
            "name\nk\nlinked\n"
        } else {
            "name\nk\nlinked\nlocked\n"
        }
    );
    let diags = q(
        "SELECT f.path, d.code FROM diagnostics d JOIN files f ON f.id = d.file_id \
                   WHERE d.code = 'unreadable' ORDER BY f.path",
    );
    let mut want = String::from("path,code\ndangling.cu,unreadable\n");
    if enforced {
        want.push_str("locked.cu,unreadable\n");
    }
    assert_eq!(diags, want);
}

/// A kernel followed by unclosed brackets (a half-saved file) is indexed,
/// with a diagnostic.
#[test]
fn a_half_saved_file_keeps_its_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{KERNEL}__global__ void late(float* a) {{ a[0] = 1; {}",
        "{(".repeat(8)
    );
    std::fs::write(dir.path().join("k.cu"), text).unwrap();
    let db = indexed(dir.path());
    let q = |sql: &str| {
        let o = cudalog()
            .args(["query", "--format", "csv", "--db"])
            .arg(&db)
            .arg(sql)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(
        q("SELECT name FROM functions WHERE kind = 'kernel' ORDER BY name"),
        "name\nk\nlate\n"
    );
    assert_ne!(q("SELECT count(*) FROM diagnostics"), "count(*)\n0\n");
}
