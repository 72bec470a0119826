//! issue 8, class 2: cooperative groups as affine facts. A block's
//! `thread_rank()` is the thread index (strides through it are costed), the
//! grid's adds the block offset, a 32-thread tile's rank among tiles is
//! warp-uniform, a rank condition names the thread index it depends on, and
//! `if (block.thread_rank() == 0)` is a single-thread region.
//! Fixture: tests/fixtures/findings/coop/coop.cu.

mod common;

fn findings() -> Vec<serde_json::Value> {
    common::check_fixtures(&["findings/coop/coop.cu"])
}

fn of<'a>(all: &'a [serde_json::Value], function: &str, rule: &str) -> Vec<&'a serde_json::Value> {
    all.iter()
        .filter(|f| f["function"] == function && f["rule"] == rule)
        .collect()
}

#[test]
fn block_rank_is_the_thread_index() {
    let all = findings();
    assert!(of(&all, "rank_unit", "uncoalesced-global").is_empty());
    let s = of(&all, "rank_stride2", "uncoalesced-global");
    assert_eq!(s.len(), 1, "{all:#?}");
    assert!(
        s[0]["message"].as_str().unwrap().contains("stride 2"),
        "{s:#?}"
    );
}

#[test]
fn grid_rank_adds_the_block_offset() {
    let all = findings();
    let s = of(&all, "grid_rank", "uncoalesced-global");
    assert_eq!(s.len(), 1, "{all:#?}");
    assert!(
        s[0]["message"].as_str().unwrap().contains("stride 4"),
        "{s:#?}"
    );
}

#[test]
fn rank_conditions_depend_on_the_thread_index() {
    let all = findings();
    let d = of(&all, "rank_divergent", "divergent-branch");
    assert_eq!(d.len(), 1, "{all:#?}");
    // A threshold on the rank (a monotone thread index): one warp per block
    // splits (issue 8 audit D5).
    assert_eq!(d[0]["facts"]["shape"]["one_warp_per"], "block", "{d:#?}");
    assert!(
        d[0]["message"]
            .as_str()
            .unwrap()
            .contains("at most one warp per block"),
        "{d:#?}"
    );
    // A warp-multiple tile's rank among tiles is the same for a whole warp.
    assert!(of(&all, "tile_uniform", "divergent-branch").is_empty());
    // rank == 0: one thread, not divergence.
    assert!(of(&all, "single", "divergent-branch").is_empty());
}
