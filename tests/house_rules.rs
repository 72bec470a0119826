//! House rules in `cudalog check`: every shipped rule on a fixture written
//! here (what it must and must not report), rule facts that follow edits,
//! and the example workspace's own rule file (EXPECTED.md's house-rule
//! table) in the three output formats, with suppressions, `--fail-on`,
//! the `findings` table and broken rule files.

use assert_cmd::Command;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn cudalog() -> Command {
    Command::cargo_bin("cudalog").unwrap()
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace-example")
}

/// A copy of `from` (its `.cudalog/` store left out, its rules kept).
fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        let name = e.file_name();
        if name.to_string_lossy().ends_with(".db") || name.to_string_lossy().contains(".db-") {
            continue;
        }
        if p.is_dir() {
            std::fs::create_dir_all(to.join(&name)).unwrap();
            copy_tree(&p, &to.join(&name));
        } else {
            std::fs::copy(&p, to.join(&name)).unwrap();
        }
    }
}

type Row = (String, u32, u32, String, String);

/// (file, line, col, rule, severity) of every finding of `check --format json`.
fn check_json(dir: &Path, rules_only: bool) -> (BTreeSet<Row>, serde_json::Value) {
    let out = cudalog()
        .args(["check", dir.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = v
        .as_array()
        .cloned()
        .or_else(|| v["findings"].as_array().cloned())
        .unwrap();
    let builtin: BTreeSet<&str> = cudalog::check::RULES.iter().map(|r| r.id).collect();
    let rows = list
        .iter()
        .filter(|f| !f["suppressed"].as_bool().unwrap_or(false))
        .filter(|f| !rules_only || !builtin.contains(f["rule"].as_str().unwrap()))
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
    (rows, v)
}

const FIXTURE: &str = "\
__device__ void helper_sync(float* s) { s[threadIdx.x] = 0; __syncthreads(); }
__device__ void helper_plain(float* s) { s[threadIdx.x] = 1; }
__global__ void __launch_bounds__(256) bounded(float* out, const float* in, int n) {
    __shared__ float tile[32][32];
    __shared__ float padded[8][33];
    tile[threadIdx.y][threadIdx.x] = in[threadIdx.x] + tile[threadIdx.x][threadIdx.y];
    padded[threadIdx.y][threadIdx.x] = in[threadIdx.x];
    helper_sync(&tile[0][0]);
    for (int i = 0; i < n; i++) {
        atomicAdd(&out[0], in[i]);
    }
    atomicAdd(&out[1], 1.0f);
    out[threadIdx.x] = in[threadIdx.x] * 2.0;
}
__global__ void unbounded(float* out, const float* in, int stride) {
    out[threadIdx.x * stride] = in[threadIdx.x] * 2.0f;
    helper_plain(out);
}
void host(float* o, float* i, int n) {
    for (int it = 0; it < 10; it++) {
        unbounded<<<1, 256>>>(o, i, n);
    }
    bounded<<<1, dim3(32, 8)>>>(o, i, n);
}
__global__ void __launch_bounds__(64) intended(double* out, const double* in, int n) {
    double acc = 0.0;
    for (int i = 0; i < n; i++) { acc += in[i] * 0.5; }
    out[threadIdx.x] = acc;
}
__global__ void __launch_bounds__(256) per_element(float* out, const float* in, int n) {
    __shared__ float rows[8][32];
    __shared__ float swz[32][32];
    rows[threadIdx.y][threadIdx.x] = in[threadIdx.x];
    swz[threadIdx.x][(threadIdx.y + threadIdx.x) % 32] = in[threadIdx.y];
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        atomicAdd(&out[i], in[i] + rows[0][threadIdx.x] + swz[threadIdx.y][threadIdx.x]);
    }
}
";

fn row(line: u32, col: u32, rule: &str, severity: &str) -> Row {
    ("fixture.cu".into(), line, col, rule.into(), severity.into())
}

/// Each shipped rule fires where it must and nowhere else: the barrier in
/// `helper_sync` (reached from `bounded`) but not `helper_plain`; `tile`
/// (`[32][32]`, read by column) but not `padded` (`[8][33]`), nor
/// `per_element`'s unpadded tiles read by rows or through a swizzled index
/// (audit H4); the atomic in the loop but not the one after it, nor the
/// per-element atomic of a block-stride loop (audit H3); `* 2.0` but not `* 2.0f`, nor `intended`, which is
/// double on purpose (a `double` accumulator); `unbounded` but not the
/// kernel with `__launch_bounds__`; the uncoalesced access of the kernel
/// launched from a loop (`bounded` is launched once). After lines are
/// inserted above, every finding moves with its function (the rule facts
/// are shifted with the other rows).
#[test]
fn every_shipped_rule_reports_exactly_its_cases_and_follows_edits() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("fixture.cu"), FIXTURE).unwrap();
    // Three shipped rules are opt-in.
    std::fs::write(
        tmp.path().join("cudalog.toml"),
        "[rules]\nenable = [\"missing_launch_bounds\", \"barrier_in_device_function\", \
         \"uncoalesced_in_looped_launch\"]\n",
    )
    .unwrap();
    let (got, _) = check_json(tmp.path(), true);
    let want: BTreeSet<Row> = [
        row(1, 61, "barrier_in_device_function", "note"),
        row(6, 5, "unpadded_shared_tile", "warning"),
        row(10, 20, "global_atomic_in_loop", "warning"),
        row(13, 24, "fp64_arithmetic", "note"),
        row(15, 1, "missing_launch_bounds", "note"),
        row(16, 5, "uncoalesced_in_looped_launch", "warning"),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);

    std::fs::write(
        tmp.path().join("fixture.cu"),
        format!("// one\n// two\n{FIXTURE}"),
    )
    .unwrap();
    let (moved, _) = check_json(tmp.path(), true);
    let want: BTreeSet<Row> = want
        .into_iter()
        .map(|(f, l, c, r, s)| (f, l + 2, c, r, s))
        .collect();
    assert_eq!(moved, want);
    let (_, v) = check_json(tmp.path(), true);
    let text = v.to_string();
    assert!(text.contains("inside the for loop at line 11"), "{text}");
    assert!(text.contains("launched from a loop (line 23)"), "{text}");
    // The sector count reads as prose ("up to 32 sectors"), not as the
    // stored `sectors_kind` token.
    assert!(text.contains("sectors per warp where"), "{text}");
    assert!(
        !text.contains("(exact)") && !text.contains("(up_to)"),
        "{text}"
    );
}

/// EXPECTED.md's house-rule table: (file, line, col, rule, severity).
fn expected_house_rules() -> BTreeSet<Row> {
    let text = std::fs::read_to_string(example().join("EXPECTED.md")).unwrap();
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("## ") {
            inside = line.contains("house rules");
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if inside && cells.len() >= 8 && cells[1].ends_with(".cu") {
            out.insert((
                cells[1].to_string(),
                cells[2].parse().unwrap(),
                cells[3].parse().unwrap(),
                cells[5].to_string(),
                cells[6].to_string(),
            ));
        }
    }
    assert!(!out.is_empty());
    out
}

#[test]
fn the_example_workspace_rules_give_the_expected_findings_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&example(), tmp.path());
    assert!(
        tmp.path()
            .join(".cudalog/rules/hidden_uncoalesced.dl")
            .exists()
    );
    let (got, _) = check_json(tmp.path(), true);
    assert_eq!(got, expected_house_rules());

    // Human: the workspace rule's finding with its description and message.
    let human = cudalog()
        .args(["check", tmp.path().to_str().unwrap()])
        .output()
        .unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(
        human.contains("warning[hidden_uncoalesced]: a kernel reaches uncoalesced device functions through calls"),
        "{human}"
    );
    assert!(
        human.contains("`row_means` has no uncoalesced access of its own but reaches 2 device function(s) that do (first: `row_mean`)"),
        "{human}"
    );

    // SARIF: a rule descriptor and a result at the right place.
    let sarif = cudalog()
        .args(["check", tmp.path().to_str().unwrap(), "--format", "sarif"])
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&sarif.stdout).unwrap();
    let run = &s["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let idx = rules
        .iter()
        .position(|r| r["id"] == "hidden_uncoalesced")
        .expect("descriptor");
    let results: Vec<&serde_json::Value> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ruleId"] == "hidden_uncoalesced")
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["ruleIndex"], idx);
    assert_eq!(results[0]["level"], "warning");
    let loc = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "device_calls.cu");
    assert_eq!(loc["region"]["startLine"], 33);

    // The findings table holds the built-in and the house-rule findings.
    let conn = rusqlite::Connection::open(tmp.path().join(".cudalog/cudalog.db")).unwrap();
    let n: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM findings WHERE rule = 'hidden_uncoalesced' AND line = 33",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 1);
    let builtin: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM findings WHERE rule = 'uncoalesced-global'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(builtin > 0);

    // A second run leaves one copy of each lint finding.
    check_json(tmp.path(), true);
    let n: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM findings WHERE rule = 'hidden_uncoalesced'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn suppressions_fail_on_and_broken_rule_files() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&example(), tmp.path());
    // Suppress the workspace rule's finding on the kernel's line.
    let path = tmp.path().join("device_calls.cu");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == 33 {
                format!("{l} // cudalog-ignore: hidden_uncoalesced")
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (got, _) = check_json(tmp.path(), true);
    let mut want = expected_house_rules();
    want.retain(|r| r.3 != "hidden_uncoalesced");
    assert_eq!(got, want);
    let conn = rusqlite::Connection::open(tmp.path().join(".cudalog/cudalog.db")).unwrap();
    let suppressed: i64 = conn
        .query_row(
            "SELECT suppressed FROM findings WHERE rule = 'hidden_uncoalesced'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(suppressed, 1, "kept in the table, marked suppressed");

    // --fail-on note: the shipped `note` lint fails the run.
    cudalog()
        .args(["check", tmp.path().to_str().unwrap(), "--fail-on", "error"])
        .assert()
        .code(1); // the example has built-in errors
    // A broken rule file: located error on stderr, exit 2, the others and
    // the built-in findings still reported.
    std::fs::write(
        tmp.path().join(".cudalog/rules/broken.dl"),
        ".decl a(x: number)\na(X) :- acesses(function_id: X).\n",
    )
    .unwrap();
    let out = cudalog()
        .args(["check", tmp.path().to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".cudalog/rules/broken.dl:2:9: error: unknown relation `acesses`"),
        "{err}"
    );
    assert!(err.contains("did you mean `accesses`"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v.to_string();
    assert!(text.contains("uncoalesced_in_looped_launch"));
    assert!(text.contains("uncoalesced-global"));
}

/// The entry point a watch loop calls after each batch: a pass writes the
/// lint findings and reports what changed since the previous pass; a rule
/// file edit is seen by `rules_changed` and re-runs only the rules.
#[test]
fn rule_state_passes_report_changes_and_rule_edits() {
    use cudalog::config::Config;
    use cudalog::index::{IndexOptions, index_directory};
    use cudalog::rules::RuleState;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(root.join("fixture.cu"), FIXTURE).unwrap();
    let db = root.join(".cudalog/cudalog.db");
    std::fs::create_dir_all(root.join(".cudalog/rules")).unwrap();
    let config = Config::default();
    index_directory(root, &db, config.clone(), &IndexOptions { progress: false }).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut state = RuleState::default();
    let first = state.run(&conn, root, &config).unwrap();
    assert!(first.rules_changed && first.errors.is_empty());
    assert_eq!(
        first.added.len(),
        3,
        "the shipped rules but the three opt-in ones"
    );
    assert!(first.removed.is_empty());
    assert!(!state.rules_changed(root, &config));

    // Nothing changed: an empty delta.
    let again = state.run(&conn, root, &config).unwrap();
    assert!(!again.rules_changed && again.added.is_empty() && again.removed.is_empty());

    // A new workspace rule file: seen, one lint finding added, then a
    // broken edit of it: reported, its finding removed, the others kept.
    let rule = root.join(".cudalog/rules/host_loops.dl");
    std::fs::write(
        &rule,
        ".lint host_loop note \"loop in `{name}`\"\n\
         .decl host_loop(function_id: number, line: number, name: symbol)\n\
         host_loop(F, L, N) :- loops(function_id: F, line: L), functions(id: F, name: N, kind: \"host\").\n",
    )
    .unwrap();
    assert!(state.rules_changed(root, &config));
    let added = state.run(&conn, root, &config).unwrap();
    assert!(added.rules_changed);
    let got: Vec<(String, u32)> = added
        .added
        .iter()
        .map(|f| (f.rule.clone(), f.line))
        .collect();
    assert_eq!(got, vec![("host_loop".to_string(), 20)]);
    std::fs::write(&rule, ".lint host_loop note \"x\"\nhost_loop(1, 2) :- .\n").unwrap();
    let broken = state.run(&conn, root, &config).unwrap();
    assert_eq!(broken.errors.len(), 1, "{:?}", broken.errors);
    assert_eq!(broken.removed.len(), 1);
    assert_eq!(broken.findings.len(), 3);
    let builtin: Vec<String> = cudalog::check::RULES
        .iter()
        .map(|r| format!("'{}'", r.id))
        .collect();
    let n: i64 = conn
        .query_row(
            &format!(
                "SELECT COUNT(*) FROM findings WHERE rule NOT IN ({})",
                builtin.join(",")
            ),
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 3, "the three lint findings stay in the findings table");
}

/// Audit H3b: the atomicCAS of a compare-and-swap retry loop is not an
/// atomic to accumulate (the loop is the atomic); the atomicAdd of the
/// counted loop after it is.
#[test]
fn atomic_cas_retry_loop_is_not_an_atomic_in_a_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/findings/divergence_cost/cas_loop.cu");
    std::fs::copy(src, tmp.path().join("cas_loop.cu")).unwrap();
    let (got, _) = check_json(tmp.path(), true);
    let atomics: Vec<&Row> = got
        .iter()
        .filter(|r| r.3 == "global_atomic_in_loop")
        .collect();
    assert_eq!(atomics.len(), 1, "{got:?}");
    assert_eq!(atomics[0].1, 15, "{got:?}");
}

/// Audit H5 (session 5): only atomics whose repeated updates combine into
/// one (add, sub, and, or, xor, min, max) are worth accumulating in a
/// register; exchange, compare-and-swap and the wrapping increment and
/// decrement are not reported.
#[test]
fn only_accumulable_atomics_are_reported_in_loops() {
    let tmp = tempfile::tempdir().unwrap();
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/findings/cheap/atomics.cu");
    std::fs::copy(src, tmp.path().join("atomics.cu")).unwrap();
    let (got, _) = check_json(tmp.path(), true);
    let lines: BTreeSet<u32> = got
        .iter()
        .filter(|r| r.3 == "global_atomic_in_loop")
        .map(|r| r.1)
        .collect();
    assert_eq!(lines, BTreeSet::from([12, 13, 14]), "{got:?}");
}

/// The `(line, message)` of every finding of `rule` on the fixture file
/// `tests/fixtures/rules/NAME`, checked alone.
fn rule_messages(name: &str, rule: &str) -> Vec<(u32, String)> {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rules")
        .join(name);
    std::fs::copy(src, tmp.path().join(name)).unwrap();
    // `uncoalesced_in_looped_launch` is opt-in.
    std::fs::write(
        tmp.path().join("cudalog.toml"),
        "[rules]\nenable = [\"uncoalesced_in_looped_launch\"]\n",
    )
    .unwrap();
    let (_, v) = check_json(tmp.path(), true);
    let list = v
        .as_array()
        .cloned()
        .or_else(|| v["findings"].as_array().cloned())
        .unwrap();
    let mut out: Vec<(u32, String)> = list
        .iter()
        .filter(|f| f["rule"] == rule)
        .map(|f| {
            (
                f["line"].as_u64().unwrap() as u32,
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Issue 8 audit #21 (session 6): an access whose stride is a kernel
/// argument the host loop changes between launches (`step = step * 256`
/// after each pass, 1 at the first) does not "repeat on every launch": the
/// message says the stride varies, and what it is at the first launch (a
/// unit stride there: coalesced); an argument the loop does not change
/// keeps the "repeats" message; a `for` counter gives its initial value.
#[test]
fn looped_launch_with_a_stride_the_loop_changes_says_so() {
    let got = rule_messages("looped_stride.cu", "uncoalesced_in_looped_launch");
    let at = |line: u32| -> Vec<&String> {
        got.iter()
            .filter(|(l, _)| *l == line)
            .map(|(_, m)| m)
            .collect()
    };
    let pass = at(9);
    assert!(!pass.is_empty(), "{got:?}");
    for m in &pass {
        assert!(!m.contains("repeats"), "{m}");
        assert!(
            m.contains("`step`") && m.contains("changes between launches"),
            "{m}"
        );
        assert!(
            m.contains("at the first launch it is 1, a unit stride"),
            "{m}"
        );
    }
    let fixed = at(16);
    assert_eq!(fixed.len(), 1, "{got:?}");
    assert!(
        fixed[0].contains("the waste repeats on every launch"),
        "{}",
        fixed[0]
    );
    let doubled = at(23);
    assert_eq!(doubled.len(), 1, "{got:?}");
    assert!(
        doubled[0].contains("`s` = 4 at the first launch"),
        "{}",
        doubled[0]
    );
    assert!(!doubled[0].contains("repeats"), "{}", doubled[0]);
}

/// Issue 8 audit #22, #46 (session 7): an uncoalesced access that is a
/// small share of its kernel's traffic (read by the block's first row
/// only) is not reported by the looped-launch house rule (the built-in
/// check reports it as a note with its share); the kernel's main strided
/// access still is.
#[test]
fn looped_launch_skips_accesses_with_a_small_traffic_share() {
    let got = rule_messages("small_share.cu", "uncoalesced_in_looped_launch");
    let lines: BTreeSet<u32> = got.iter().map(|(l, _)| *l).collect();
    assert!(lines.contains(&15), "{got:?}");
    assert!(!lines.contains(&13), "{got:?}");
}

/// Issue 8 audit #35 (session 6): an atomic issued by one thread per group
/// (`if (tile.thread_rank() == 0)`) is already aggregated, and a
/// grid-stride loop runs once per thread unless the grid is smaller than
/// the data: the message says each, for the finding that has it; the
/// plain per-thread atomic keeps the plain advice.
#[test]
fn aggregated_and_grid_stride_atomics_say_what_accumulating_saves() {
    let got = rule_messages("atomics_grouped.cu", "global_atomic_in_loop");
    let lines: Vec<u32> = got.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![8, 19, 27], "{got:?}");
    let m = |i: usize| got[i].1.as_str();
    assert!(
        !m(0).contains("aggregated") && !m(0).contains("grid-stride"),
        "{}",
        m(0)
    );
    assert!(
        m(0).contains("update global memory once after the loop"),
        "{}",
        m(0)
    );
    assert!(
        m(1).contains("already aggregated") && m(1).contains("one atomic per group"),
        "{}",
        m(1)
    );
    assert!(m(1).contains("grid-stride loop"), "{}", m(1));
    assert!(!m(2).contains("aggregated"), "{}", m(2));
    assert!(
        m(2).contains("grid-stride loop") && m(2).contains("fewer threads than the data"),
        "{}",
        m(2)
    );
}

/// Audit 20261203 #36 (binaryPartitionCG): an atomic already aggregated
/// (one thread per group) in a grid-stride loop is a note, through the
/// lint's `severity` column; the per-thread atomic and the plain
/// grid-stride one stay warnings.
#[test]
fn aggregated_atomics_in_grid_stride_loops_are_notes() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "atomics_grouped.cu";
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rules")
        .join(name);
    std::fs::copy(src, tmp.path().join(name)).unwrap();
    // `uncoalesced_in_looped_launch` is opt-in.
    std::fs::write(
        tmp.path().join("cudalog.toml"),
        "[rules]\nenable = [\"uncoalesced_in_looped_launch\"]\n",
    )
    .unwrap();
    let (_, v) = check_json(tmp.path(), true);
    let list = v
        .as_array()
        .cloned()
        .or_else(|| v["findings"].as_array().cloned())
        .unwrap();
    let mut got: Vec<(u64, String)> = list
        .iter()
        .filter(|f| f["rule"] == "global_atomic_in_loop")
        .map(|f| {
            (
                f["line"].as_u64().unwrap(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (8, "warning".to_string()),
            (19, "note".to_string()),
            (27, "warning".to_string())
        ]
    );
}

/// Scout audit 20261130 (systemWideAtomics): `*_system` atomics exist so
/// that the host or a peer device sees each update as it happens (they
/// update memory the CPU reads and writes concurrently); accumulating them
/// in a register would change what the other side observes, so the rule
/// does not advise it. The device-scope atomic of the same shape is still
/// reported.
#[test]
fn system_scope_atomics_are_not_advised_to_accumulate() {
    let got = rule_messages("atomics_system.cu", "global_atomic_in_loop");
    let lines: Vec<u32> = got.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![14], "{got:?}");
}

/// (audit 20261205 #8 srad2, #59 attention_forward) Double operations that
/// all run once per thread outside every loop, no more of them than the
/// kernel's global accesses, are a note saying the memory traffic bounds
/// the kernel; one in a loop, or more ops than accesses, stay warnings.
#[test]
fn fp64_ops_once_per_thread_next_to_as_many_accesses_are_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "fp64_cost.cu";
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/rules")
            .join(name),
        tmp.path().join(name),
    )
    .unwrap();
    let (_, v) = check_json(tmp.path(), true);
    let list = v
        .as_array()
        .cloned()
        .or_else(|| v["findings"].as_array().cloned())
        .unwrap();
    let sev = |function: &str| -> Vec<(String, String)> {
        list.iter()
            .filter(|f| f["rule"] == "fp64_arithmetic" && f["function"] == function)
            .map(|f| {
                (
                    f["severity"].as_str().unwrap().to_string(),
                    f["message"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    for k in ["scale_once", "setup_only"] {
        let once = sev(k);
        assert_eq!(once.len(), 1, "{k}: {v:#}");
        assert_eq!(once[0].0, "note", "{k}: {once:?}");
        assert!(
            once[0].1.contains("once per thread outside every loop"),
            "{once:?}"
        );
    }
    for k in ["scale_loop", "many_ops"] {
        let w = sev(k);
        assert_eq!(w.len(), 1, "{k}: {v:#}");
        assert_eq!(w[0].0, "warning", "{k}: {w:?}");
    }
    // (audit 20261208 #34) Operators of `float4` take `float`.
    assert!(sev("vector_scale").is_empty(), "{v:#}");
}

/// (audit 20261205 #46, boxFilter `od[y * w]`) The looped-launch rule
/// reports only accesses the built-in rule reports as warnings: a one-off
/// access the built-in makes a note (a loop beside it repeats its pattern)
/// costs little per launch, looped or not.
#[test]
fn a_looped_launch_does_not_promote_a_note_level_access() {
    let got = rule_messages("looped_note.cu", "uncoalesced_in_looped_launch");
    let lines: Vec<u32> = got.iter().map(|(l, _)| *l).collect();
    assert!(!lines.contains(&5) && !lines.contains(&6), "{got:?}");
    assert!(lines.contains(&8) && lines.contains(&9), "{got:?}");
}
