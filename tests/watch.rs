//! Watch mode: after any sequence of file changes, the database the watch
//! session leaves equals a fresh check of the same tree, row for row; and
//! the real event loop (notify, Ctrl-C) and concurrent processes keep the
//! store consistent.

mod common;

use cudalog::config::Config;
use cudalog::index::{IndexOptions, Indexer};
use cudalog::store::Store;
use cudalog::watch::{Changes, Session};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/workspace-example");

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == ".cudalog" {
            continue;
        }
        let dst = to.join(&name);
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// The dump of a fresh check of `root` into a new database.
fn fresh(root: &Path) -> BTreeMap<String, Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("fresh.db")).unwrap();
    let mut ix = Indexer::new(root, Config::load(root).unwrap(), None);
    ix.load_all().unwrap();
    ix.run_full(&mut store).unwrap();
    // `check` runs the house rules after the index run; so does watch.
    let config = Config::load(root).unwrap();
    cudalog::rules::RuleState::default()
        .run(store.connection(), root, &config)
        .unwrap();
    common::dump(store.connection())
}

fn start(root: &Path) -> Session {
    let db = root.join(".cudalog").join("cudalog.db");
    Session::start(root, &db, &[], &IndexOptions { progress: false })
        .unwrap()
        .0
}

fn batch(paths: &[PathBuf]) -> Changes {
    Changes {
        paths: paths.iter().cloned().collect(),
        rescan: false,
    }
}

/// The sources and headers under `root` (relative, sorted), skipping the
/// database directory.
fn sources(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(root.join(&d)).unwrap() {
            let e = e.unwrap();
            let rel = d.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                if e.file_name() != ".cudalog" {
                    stack.push(rel);
                }
            } else if matches!(rel.extension().and_then(|x| x.to_str()), Some("cu" | "cuh")) {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// One change to the tree.
#[derive(Clone, Debug)]
enum Op {
    /// Insert blank lines at the top of a file (its functions move).
    Shift(usize, usize),
    /// Change an access pattern in a file (`threadIdx.x` → `threadIdx.y`).
    Retarget(usize),
    /// Append a kernel with a strided access to a file.
    AppendKernel(usize, u8),
    /// Cut a file in half (a half-written save).
    Truncate(usize),
    /// Create a new file (in a subdirectory or not).
    Create(u8, bool),
    /// Rename a file (possibly into a subdirectory); the editor's atomic
    /// save is the same event pair.
    Rename(usize, u8),
    /// Delete a file.
    Delete(usize),
    /// Rename the subdirectory, if any.
    RenameDir,
    /// Remove the subdirectory, if any.
    DeleteDir,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..20usize, 1..4usize).prop_map(|(f, n)| Op::Shift(f, n)),
        (0..20usize).prop_map(Op::Retarget),
        (0..20usize, 0..8u8).prop_map(|(f, k)| Op::AppendKernel(f, k)),
        (0..20usize).prop_map(Op::Truncate),
        (0..8u8, any::<bool>()).prop_map(|(k, d)| Op::Create(k, d)),
        (0..20usize, 0..8u8).prop_map(|(f, k)| Op::Rename(f, k)),
        (0..20usize).prop_map(Op::Delete),
        Just(Op::RenameDir),
        Just(Op::DeleteDir),
    ]
}

fn kernel(k: u8) -> String {
    format!(
        "__global__ void extra_{k}(float* a, const float* b, int n) {{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i * {s}] = b[i];\n}}\n",
        s = k % 4 + 1
    )
}

/// Apply `op` to the tree; returns the paths a file watcher would report.
fn perform(root: &Path, op: &Op) -> Vec<PathBuf> {
    let files = sources(root);
    let pick = |i: usize| files.get(i % files.len().max(1)).cloned();
    let subdir = ["sub", "moved"]
        .iter()
        .map(PathBuf::from)
        .find(|d| root.join(d).is_dir());
    match op {
        Op::Shift(i, n) => pick(*i).map_or(vec![], |f| {
            let t = std::fs::read_to_string(root.join(&f)).unwrap();
            std::fs::write(root.join(&f), "\n".repeat(*n) + &t).unwrap();
            vec![root.join(f)]
        }),
        Op::Retarget(i) => pick(*i).map_or(vec![], |f| {
            let t = std::fs::read_to_string(root.join(&f)).unwrap();
            std::fs::write(root.join(&f), t.replacen("threadIdx.x", "threadIdx.y", 1)).unwrap();
            vec![root.join(f)]
        }),
        Op::AppendKernel(i, k) => pick(*i).map_or(vec![], |f| {
            let t = std::fs::read_to_string(root.join(&f)).unwrap();
            std::fs::write(root.join(&f), t + &kernel(*k)).unwrap();
            vec![root.join(f)]
        }),
        Op::Truncate(i) => pick(*i).map_or(vec![], |f| {
            let t = std::fs::read(root.join(&f)).unwrap();
            std::fs::write(root.join(&f), &t[..t.len() / 2]).unwrap();
            vec![root.join(f)]
        }),
        Op::Create(k, in_dir) => {
            let dir = if *in_dir {
                subdir.unwrap_or_else(|| PathBuf::from("sub"))
            } else {
                PathBuf::new()
            };
            std::fs::create_dir_all(root.join(&dir)).unwrap();
            let f = dir.join(format!("new_{k}.cu"));
            std::fs::write(root.join(&f), kernel(*k)).unwrap();
            vec![root.join(&dir), root.join(f)]
        }
        Op::Rename(i, k) => pick(*i).map_or(vec![], |f| {
            let to = match &subdir {
                Some(d) if k % 2 == 0 => d.join(format!("renamed_{k}.cu")),
                _ => PathBuf::from(format!("renamed_{k}.cu")),
            };
            if root.join(&to).exists() {
                return vec![];
            }
            std::fs::rename(root.join(&f), root.join(&to)).unwrap();
            vec![root.join(f), root.join(to)]
        }),
        Op::Delete(i) => pick(*i).map_or(vec![], |f| {
            std::fs::remove_file(root.join(&f)).unwrap();
            vec![root.join(f)]
        }),
        Op::RenameDir => match subdir {
            Some(d) => {
                let to = if d == Path::new("sub") {
                    "moved"
                } else {
                    "sub"
                };
                std::fs::rename(root.join(&d), root.join(to)).unwrap();
                vec![root.join(d), root.join(to)]
            }
            None => vec![],
        },
        Op::DeleteDir => match subdir {
            Some(d) => {
                std::fs::remove_dir_all(root.join(&d)).unwrap();
                vec![root.join(d)]
            }
            None => vec![],
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// Random sequences of creates, edits, renames and deletes, cut into
    /// random batches: after every batch the watched database equals a
    /// fresh check of the tree.
    #[test]
    fn watch_equals_a_fresh_check_after_any_edits(
        ops in proptest::collection::vec((op(), any::<bool>()), 1..8)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        copy_tree(Path::new(EXAMPLE), &root);
        let mut session = start(&root);
        let mut pending: Vec<PathBuf> = Vec::new();
        let last = ops.len() - 1;
        for (n, (o, close)) in ops.iter().enumerate() {
            pending.extend(perform(&root, o));
            if *close || n == last {
                session.apply(&batch(&pending)).unwrap();
                pending.clear();
                let watched = common::dump(session.store().connection());
                common::assert_same(&fresh(&root), &watched, &format!("after {:?}", &ops[..=n]));
            }
        }
    }
}

#[test]
fn a_rescan_finds_what_events_missed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_tree(Path::new(EXAMPLE), &root);
    let mut session = start(&root);
    // Changes no event reported (the watcher overflowed).
    std::fs::remove_file(root.join("strided.cu")).unwrap();
    std::fs::write(root.join("added.cu"), kernel(3)).unwrap();
    let r = session
        .apply(&Changes {
            paths: Default::default(),
            rescan: true,
        })
        .unwrap()
        .expect("changes");
    assert!(r.rescan);
    assert_eq!(r.files_changed, 2, "{r:?}");
    common::assert_same(
        &fresh(&root),
        &common::dump(session.store().connection()),
        "rescan",
    );
}

#[test]
fn a_storm_of_events_is_one_rescan() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_tree(Path::new(EXAMPLE), &root);
    let mut session = start(&root);
    let mut paths = Vec::new();
    for i in 0..cudalog::watch::STORM_PATHS + 10 {
        let p = root.join(format!("gen/f{i}.cu"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            &p,
            kernel((i % 8) as u8).replace("extra_", &format!("k{i}_")),
        )
        .unwrap();
        paths.push(p);
    }
    let r = session.apply(&batch(&paths)).unwrap().expect("changes");
    assert!(r.rescan, "{r:?}");
    assert_eq!(r.files_changed, cudalog::watch::STORM_PATHS + 10);
    common::assert_same(
        &fresh(&root),
        &common::dump(session.store().connection()),
        "storm",
    );
}

#[test]
fn ignored_paths_and_the_database_directory_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_tree(Path::new(EXAMPLE), &root);
    std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
    let mut session = start(&root);
    let before = common::dump(session.store().connection());
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::write(root.join("build/gen.cu"), kernel(1)).unwrap();
    std::fs::write(root.join(".cudalog/stray.cu"), kernel(2)).unwrap();
    std::fs::write(root.join("notes.txt"), "not a source").unwrap();
    let r = session
        .apply(&batch(&[
            root.join("build"),
            root.join("build/gen.cu"),
            root.join(".cudalog/stray.cu"),
            root.join(".cudalog/cudalog.db-wal"),
            root.join("notes.txt"),
        ]))
        .unwrap();
    assert!(r.is_none(), "{r:?}");
    common::assert_same(
        &before,
        &common::dump(session.store().connection()),
        "ignored",
    );
    // Un-ignoring `build/` (an ignore-file edit) re-lists the tree.
    std::fs::write(root.join(".gitignore"), "").unwrap();
    let r = session
        .apply(&batch(&[root.join(".gitignore")]))
        .unwrap()
        .expect("the file under build/ is now indexed");
    assert!(r.rescan);
    assert_eq!(r.files_changed, 1, "{r:?}");
    common::assert_same(
        &fresh(&root),
        &common::dump(session.store().connection()),
        "un-ignored",
    );
}

#[test]
fn a_configuration_change_rebuilds_and_a_broken_one_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_tree(Path::new(EXAMPLE), &root);
    let mut session = start(&root);
    let cfg = root.join("cudalog.toml");
    let old = std::fs::read_to_string(&cfg).unwrap_or_default();
    // Broken: reported, the previous configuration stays in force.
    std::fs::write(&cfg, "[launch\nblock = ").unwrap();
    let r = session
        .apply(&batch(std::slice::from_ref(&cfg)))
        .unwrap()
        .expect("report");
    assert!(!r.rebuilt);
    assert!(r.diagnostics[0].contains("cudalog.toml"), "{r:?}");
    // A valid change rebuilds under the new configuration.
    let new = old.replace("block = [256, 1, 1]", "block = [128, 1, 1]");
    assert_ne!(new, old, "the example's configuration sets a default block");
    std::fs::write(&cfg, new).unwrap();
    let r = session.apply(&batch(&[cfg])).unwrap().expect("report");
    assert!(r.rebuilt, "{r:?}");
    common::assert_same(
        &fresh(&root),
        &common::dump(session.store().connection()),
        "config",
    );
}

#[test]
fn a_house_rule_added_while_watching_runs_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_tree(Path::new(EXAMPLE), &root);
    let mut session = start(&root);
    let rule = Path::new(EXAMPLE).join(".cudalog/rules/hidden_uncoalesced.dl");
    let to = root.join(".cudalog/rules/hidden_uncoalesced.dl");
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(&rule, &to).unwrap();
    let r = session
        .apply(&batch(std::slice::from_ref(&to)))
        .unwrap()
        .expect("the rule ran");
    assert_eq!(r.files_changed, 0, "{r:?}");
    assert!(
        r.findings_added > 0,
        "the example's house rule fires: {r:?}"
    );
    common::assert_same(
        &fresh(&root),
        &common::dump(session.store().connection()),
        "rule added",
    );
    // Touching it again without a change runs nothing.
    assert!(session.apply(&batch(&[to])).unwrap().is_none());
}

/// The watch loop defers the whole-store house-rule pass while events are
/// queued: a deferred batch leaves the rule findings for later (and says
/// so), and the catch-up pass brings the store back to a fresh check.
#[test]
fn a_deferred_house_rule_pass_catches_up_to_a_fresh_check() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_tree(Path::new(EXAMPLE), &root);
    let mut session = start(&root);
    session.defer_rules = true;
    let rule = Path::new(EXAMPLE).join(".cudalog/rules/hidden_uncoalesced.dl");
    let to = root.join(".cudalog/rules/hidden_uncoalesced.dl");
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(&rule, &to).unwrap();
    let mut r = session
        .apply(&batch(std::slice::from_ref(&to)))
        .unwrap()
        .expect("a report");
    assert!(r.rules_deferred && session.rules_owed(), "{r:?}");
    assert_eq!(r.findings_added, 0, "nothing ran yet: {r:?}");
    session.catch_up_rules(&mut r).unwrap();
    assert!(!r.rules_deferred && !session.rules_owed());
    assert!(r.findings_added > 0, "the rule ran: {r:?}");
    common::assert_same(
        &fresh(&root),
        &common::dump(session.store().connection()),
        "deferred rules caught up",
    );
}
