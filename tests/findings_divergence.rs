//! issue 8, class 6: divergence worth reporting — block-/grid-stride loop
//! tails are notes costing one partial iteration, single-writer epilogues
//! in any spelling are not divergence, and a one-sided `if` says what is
//! serialised. Fixture: tests/fixtures/findings/divergence.cu.

mod common;

fn findings() -> Vec<serde_json::Value> {
    common::check_fixtures(&["findings/divergence.cu"])
}

fn divergent_in<'a>(all: &'a [serde_json::Value], function: &str) -> Vec<&'a serde_json::Value> {
    all.iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["function"] == function)
        .collect()
}

#[test]
fn stride_loop_tails_are_notes_with_their_cost() {
    let all = findings();
    let d = divergent_in(&all, "block_stride");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["severity"], "note");
    let m = d[0]["message"].as_str().unwrap();
    assert!(
        m.contains("block-stride") && m.contains("one partial iteration"),
        "{m}"
    );
    assert_eq!(d[0]["facts"]["stride_tail"], true);
    // A grid-stride loop is at most a note (its guard is a boundary check
    // on a grid-wide index).
    let d = divergent_in(&all, "grid_stride");
    assert!(d.iter().all(|x| x["severity"] == "note"), "{d:?}");
    // Lanes 4 elements apart stepping by 1: trip counts differ by up to 124.
    let d = divergent_in(&all, "per_thread_chunk");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["severity"], "warning");
    assert_eq!(d[0]["facts"]["stride_tail"], false);
}

#[test]
fn single_writer_epilogues_in_any_spelling_are_not_divergence() {
    let all = findings();
    let d = divergent_in(&all, "epilogues");
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn one_sided_if_says_what_is_serialised() {
    let all = findings();
    let d = divergent_in(&all, "one_sided");
    assert_eq!(d.len(), 1, "{d:?}");
    let m = d[0]["message"].as_str().unwrap();
    assert!(
        m.contains("the lanes that take the branch run it while the others")
            && m.contains("no path of their own, wait"),
        "{m}"
    );
    assert!(!m.contains("both paths"), "{m}");
}
