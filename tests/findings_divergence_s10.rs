//! issue 8, session 10 (audit 20261205 #6 hybridsort `Astart >= …`, #52 and
//! #56 trimat `j_base > i_base`): an early exit outside every loop whose
//! taken side is only `return` runs nothing twice (the lanes leave, the
//! others go on), so it is not a divergent branch; the same exit inside a
//! loop, and the same test guarding work instead, still are. Fixture:
//! tests/fixtures/findings/divergence_s10/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/divergence_s10/kernels.cu"]))
}

fn divergent(function: &str) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["function"] == function)
        .collect()
}

#[test]
fn an_early_return_outside_loops_is_not_a_divergent_branch() {
    assert!(divergent("skip_upper").is_empty(), "{:#?}", findings());
}

#[test]
fn an_early_return_in_a_loop_and_a_guarded_body_still_are() {
    assert!(!divergent("skip_in_loop").is_empty(), "{:#?}", findings());
    let w = divergent("work_under_test");
    assert!(w.iter().any(|f| f["line"] == 29), "{:#?}", findings());
}

/// (audit 20261207 #33, bisect_util `1 == multiplicity`) A straight-line
/// part outside every loop of up to four times the predication threshold
/// (ops and memory accesses) costs a few dozen issue slots once: a note
/// that says so; a longer one stays a warning.
#[test]
fn a_medium_part_run_once_is_a_note_a_long_one_a_warning() {
    let m = divergent("once_medium");
    assert_eq!(m.len(), 1, "{:#?}", findings());
    assert_eq!(m[0]["severity"], "note", "{:#?}", m[0]);
    assert!(
        m[0]["message"]
            .as_str()
            .unwrap()
            .contains("run once per thread outside any loop"),
        "{:#?}",
        m[0]
    );
    let l = divergent("once_long");
    assert_eq!(l.len(), 1, "{:#?}", findings());
    assert_eq!(l[0]["severity"], "warning", "{:#?}", l[0]);
}
