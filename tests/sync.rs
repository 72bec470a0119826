//! Synchronisation rules on fixtures of GPUVerify's and WEFT's shapes
//! (tests/fixtures/sync, written for these tests): races with witnesses,
//! refined barrier divergence, named-barrier errors, and their absence on
//! the well-synchronised variants.

use assert_cmd::Command;
use std::collections::BTreeSet;
use std::path::Path;

/// (function, rule, severity) of every synchronisation finding.
fn findings() -> (BTreeSet<(String, String, String)>, Vec<serde_json::Value>) {
    findings_in("tests/fixtures/sync")
}

fn findings_in(fixtures: &str) -> (BTreeSet<(String, String, String)>, Vec<serde_json::Value>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(fixtures);
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
        }
    }
    let out = Command::cargo_bin("cudalog")
        .unwrap()
        .args(["check", "--format", "json", "--fail-on", "note"])
        .arg(dir.path())
        .output()
        .unwrap();
    let all: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let sync: Vec<serde_json::Value> = all
        .into_iter()
        .filter(|f| {
            let r = f["rule"].as_str().unwrap();
            r.ends_with("-race") || r.starts_with("named-barrier") || r == "barrier-divergence"
        })
        .collect();
    let set = sync
        .iter()
        .map(|f| {
            (
                f["function"].as_str().unwrap().to_string(),
                f["rule"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (set, sync)
}

fn has(set: &BTreeSet<(String, String, String)>, func: &str, rule: &str, sev: &str) -> bool {
    set.contains(&(func.into(), rule.into(), sev.into()))
}

fn none_in(set: &BTreeSet<(String, String, String)>, func: &str) -> bool {
    !set.iter().any(|(f, _, _)| f == func)
}

#[test]
fn races_are_found_with_witnesses_and_well_synchronised_kernels_are_clean() {
    let (set, all) = findings();
    assert!(has(&set, "same_slot", "shared-race", "error"), "{set:?}");
    assert!(has(&set, "neighbour", "shared-race", "error"), "{set:?}");
    assert!(
        has(&set, "shared_scalar", "shared-race", "error"),
        "{set:?}"
    );
    assert!(has(&set, "shift_left", "global-race", "error"), "{set:?}");
    assert!(
        has(&set, "block_local_index", "global-race", "error"),
        "{set:?}"
    );
    assert!(has(&set, "atomic_slot", "global-race", "error"), "{set:?}");
    for clean in [
        "neighbour_synced",
        "tree_reduce",
        "one_writer",
        "scale",
        "grid_stride",
        "handoff",
    ] {
        assert!(none_in(&set, clean), "{clean}: {set:?}");
    }
    // The witness names two distinct threads that collide, and the second
    // access is a related location.
    let f = all
        .iter()
        .find(|f| f["function"] == "neighbour" && f["rule"] == "shared-race")
        .unwrap();
    let w = &f["facts"]["witness"]["threads"];
    assert_ne!(w[0], w[1], "{f}");
    let (t0, t1) = (w[0][0].as_i64().unwrap(), w[1][0].as_i64().unwrap());
    assert!((t0 - t1).abs() == 1, "neighbours collide: {f}");
    assert!(f["facts"]["related_line"].as_u64().is_some(), "{f}");
    // Races between blocks name the blocks.
    let g = all
        .iter()
        .find(|f| f["function"] == "block_local_index")
        .unwrap();
    let b = &g["facts"]["witness"]["blocks"];
    assert_ne!(b[0], b[1], "{g}");
}

#[test]
fn barrier_divergence_is_refined() {
    let (set, _) = findings();
    // A grid barrier under a blockIdx-dependent condition.
    assert!(
        has(&set, "grid_sync_in_branch", "barrier-divergence", "error"),
        "{set:?}"
    );
    // A return before __syncthreads is a warning with its own wording.
    assert!(
        has(&set, "early_exit", "barrier-divergence", "warning"),
        "{set:?}"
    );
    assert!(
        !has(&set, "early_exit", "barrier-divergence", "error"),
        "{set:?}"
    );
    // A loop whose trip count differs per warp, holding a barrier: the
    // lanes of each warp agree, the warps differ only for some `n`, and
    // with no barrier after the loop the warps that finish exit (defined
    // since sm_70): a warning that says so (audits 20261206 #48, 20261207
    // #48), not an error.
    assert!(
        has(&set, "per_warp_loop", "barrier-divergence", "warning"),
        "{set:?}"
    );
    assert!(
        !has(&set, "per_warp_loop", "barrier-divergence", "error"),
        "{set:?}"
    );
}

#[test]
fn named_barrier_errors_follow_weft() {
    let (set, _) = findings();
    assert!(
        has(&set, "crossed", "named-barrier-deadlock", "error"),
        "{set:?}"
    );
    assert!(
        has(&set, "three_for_two", "named-barrier-over-arrival", "error"),
        "{set:?}"
    );
    assert!(
        has(&set, "twice", "named-barrier-recycling", "error"),
        "{set:?}"
    );
    assert!(
        has(&set, "two_counts", "named-barrier-count-mismatch", "error"),
        "{set:?}"
    );
    assert!(none_in(&set, "handoff"), "{set:?}");
}

#[test]
fn accesses_through_rebased_pointers_use_the_base_and_offset() {
    let (set, _) = findings();
    // `p += tid`, `T *p = base + 4 * x`, `&buf[64]`: distinct per thread.
    for clean in ["rebased_param", "rebased_local", "shared_halves"] {
        assert!(none_in(&set, clean), "{clean}: {set:?}");
    }
    // `p[1]` of thread t is `p[0]` of thread t + 1.
    assert!(
        has(&set, "rebased_overlap", "global-race", "error"),
        "{set:?}"
    );
    // `q = &buf[1]`: `q[t]` is `buf[t + 1]`, another thread's slot.
    assert!(
        has(&set, "shared_shifted", "shared-race", "error"),
        "{set:?}"
    );
}

#[test]
fn unknown_block_dimensions_are_positive_and_bound_the_thread_index() {
    let (set, _) = findings_in("tests/fixtures/sync_unlaunched");
    // `&shared[blockDim.x / 32]` starts past slot 0 for every block size.
    assert!(none_in(&set, "two_tables"), "{set:?}");
    // `buf[t + blockDim.x]` is past every thread's `buf[t]`.
    assert!(none_in(&set, "past_the_block"), "{set:?}");
    // `buf[t + blockDim.x / 2]` is another thread's `buf[t]`.
    assert!(
        has(&set, "overlapping_halves", "shared-race", "error"),
        "{set:?}"
    );
}

#[test]
fn a_block_uniform_loop_exit_after_a_barrier_orders_the_last_iteration() {
    let (set, _) = findings();
    for clean in ["reduce_then_broadcast", "sweep_down"] {
        assert!(none_in(&set, clean), "{clean}: {set:?}");
    }
    assert!(
        has(&set, "barrier_first", "shared-race", "error"),
        "{set:?}"
    );
}

#[test]
fn lanes_of_one_warp_storing_one_warp_uniform_value_are_benign() {
    let (set, _) = findings();
    assert!(none_in(&set, "warp_slots"), "{set:?}");
    assert!(none_in(&set, "warp_slots_reassigned"), "{set:?}");
    assert!(
        has(&set, "warp_slots_own", "shared-race", "error"),
        "{set:?}"
    );
    assert!(
        has(&set, "warp_slots_garbage", "shared-race", "error"),
        "{set:?}"
    );
}

#[test]
fn cooperative_group_ranks_are_thread_indices() {
    let (set, all) = findings();
    assert!(has(&set, "tile_ranks", "shared-race", "error"), "{set:?}");
    // Lane 0 zeroing slot 0 and lane 1 of the same warp storing its
    // warp's slot 0 (no `__syncwarp` between), or warp 1 storing slot 1.
    let f = all
        .iter()
        .find(|f| f["function"] == "tile_ranks" && f["rule"] == "shared-race")
        .unwrap();
    let w = &f["facts"]["witness"]["threads"];
    let (t0, t1) = (w[0][0].as_i64().unwrap(), w[1][0].as_i64().unwrap());
    assert_ne!(t0, t1, "{f}");
    assert!(t0 / 32 == 0 || t1 / 32 == 0, "{f}");
}

#[test]
fn grid_barriers_follow_every_definition_of_a_loop_variable() {
    let (set, _) = findings();
    assert!(none_in(&set, "grid_loop_on_global"), "{set:?}");
    assert!(
        has(&set, "grid_loop_by_block", "barrier-divergence", "error"),
        "{set:?}"
    );
}

#[test]
fn tile_and_warp_syncs_order_the_threads_of_one_tile() {
    let (set, all) = findings();
    for clean in ["tile_tree", "tile_halves", "tile_caller", "warp_rotate"] {
        assert!(none_in(&set, clean), "{clean}: {set:?}");
    }
    assert!(has(&set, "tile_crosses", "shared-race", "error"), "{set:?}");
    assert!(has(&set, "warp_crosses", "shared-race", "error"), "{set:?}");
    // The witness is two threads of different tiles.
    let f = all
        .iter()
        .find(|f| f["function"] == "tile_crosses")
        .unwrap();
    let w = &f["facts"]["witness"]["threads"];
    let (t0, t1) = (w[0][0].as_i64().unwrap(), w[1][0].as_i64().unwrap());
    assert_ne!(t0 / 16, t1 / 16, "{f}");
}

#[test]
fn device_functions_take_their_callers_threads() {
    let (set, _) = findings();
    // Called from threads 0..15 (one 16-thread tile, its syncs order it).
    assert!(none_in(&set, "rank16"), "{set:?}");
    // Called from one thread per block.
    assert!(none_in(&set, "store_winner"), "{set:?}");
    // Called from every thread: threads 2k and 2k + 1 share a slot.
    assert!(has(&set, "store_all", "global-race", "error"), "{set:?}");
    // Called from lane 0 of each warp: one thread per warp is not one per
    // block.
    assert!(has(&set, "store_lane0", "global-race", "error"), "{set:?}");
}

#[test]
fn warp_index_conditions_are_warp_uniform_without_a_launch() {
    let (set, _) = findings_in("tests/fixtures/sync_unlaunched");
    assert!(none_in(&set, "first_warp_syncs"), "{set:?}");
    assert!(
        has(&set, "half_warp_syncs", "barrier-divergence", "error"),
        "{set:?}"
    );
}

#[test]
fn unprovable_races_are_not_errors_and_say_what_is_assumed() {
    let (set, all) = findings();
    // Loaded indices and data guards: notes stating the assumption.
    assert!(
        has(&set, "scatter_offsets", "global-race", "note"),
        "{set:?}"
    );
    assert!(has(&set, "find_slot", "global-race", "note"), "{set:?}");
    let f = all
        .iter()
        .find(|f| f["function"] == "scatter_offsets")
        .unwrap();
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("race-free only if those values keep different threads' locations apart"),
        "{f}"
    );
    // A collision that depends on parameters: a warning naming them.
    assert!(has(&set, "two_ranges", "shared-race", "warning"), "{set:?}");
    let f = all.iter().find(|f| f["function"] == "two_ranges").unwrap();
    assert_eq!(
        f["facts"]["depends_on"],
        serde_json::json!(["startA", "startB"]),
        "{f}"
    );
    // Races that hold whatever the values stay errors.
    assert!(has(&set, "same_slot", "shared-race", "error"), "{set:?}");
    // Stores through `*((int4 *)&rows[r][0] + k)` are accesses of `rows`.
    assert!(none_in(&set, "vector_rows"), "{set:?}");
    assert!(
        has(&set, "vector_rows_overlap", "shared-race", "error"),
        "{set:?}"
    );
}

#[test]
fn blocks_with_a_constant_stride_stay_in_their_window_when_the_block_size_is_unknown() {
    let (set, _) = findings_in("tests/fixtures/sync_unlaunched");
    assert!(none_in(&set, "strided_blocks"), "{set:?}");
    assert!(none_in(&set, "strided_quads"), "{set:?}");
    assert!(has(&set, "next_element", "global-race", "error"), "{set:?}");
}

#[test]
fn same_constant_stores_are_benign_and_other_values_still_race() {
    let (set, _) = findings();
    // `*over = true` by every thread that finds work; a shared flag reset
    // to one constant by every thread before a barrier.
    assert!(none_in(&set, "flag_store"), "{set:?}");
    assert!(none_in(&set, "shared_flag"), "{set:?}");
    // Two values, or a read of the flag in the same interval: races.
    assert!(
        has(&set, "flag_two_values", "shared-race", "error"),
        "{set:?}"
    );
    assert!(
        has(&set, "flag_read_same_phase", "shared-race", "error"),
        "{set:?}"
    );
}

#[test]
fn shared_scalars_set_once_carry_their_value() {
    let (set, all) = findings();
    // `startB = startA + lenA` set by thread 0: the ranges are disjoint.
    assert!(none_in(&set, "ranges_set_once"), "{set:?}");
    // One element of overlap: still a race, naming what it depends on.
    let f = all
        .iter()
        .find(|f| f["function"] == "ranges_overlap" && f["rule"] == "shared-race")
        .unwrap_or_else(|| panic!("{set:?}"));
    assert_ne!(f["severity"], "note", "{f}");
}

#[test]
fn possible_race_notes_name_the_data_they_assume() {
    let (set, all) = findings();
    let msg = |func: &str| {
        all.iter()
            .find(|f| f["function"] == func)
            .unwrap_or_else(|| panic!("{func}: {set:?}"))
            .clone()
    };
    // Equality with a uniform key: unique keys.
    let f = msg("find_key");
    assert_eq!(f["severity"], "note", "{f}");
    let m = f["message"].as_str().unwrap();
    assert!(m.contains("unique keys") && m.contains("`keys"), "{f}");
    // A sentinel (`== -1`) is no key: the note quotes the guard.
    let f = msg("sentinel_guard");
    assert_eq!(f["severity"], "note", "{f}");
    let m = f["message"].as_str().unwrap();
    assert!(
        !m.contains("unique keys") && m.contains("(`in[t] == -1`)"),
        "{f}"
    );
    // An interval search between consecutive elements: sorted keys.
    let f = msg("find_slot");
    assert_eq!(f["severity"], "note", "{f}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("only if `keys` is sorted"),
        "{f}"
    );
    // A scatter through loaded offsets names where they come from, and a
    // possible race's witness names threads only (no solver-picked values).
    let f = msg("scatter_offsets");
    let m = f["message"].as_str().unwrap();
    assert!(m.contains("(`offsets[t]`)"), "{f}");
    assert!(!m.contains("(with "), "{f}");
}

#[test]
fn an_exit_before_a_call_with_a_barrier_says_when_no_thread_leaves() {
    let (set, all) = findings();
    let f = all
        .iter()
        .find(|f| f["function"] == "exit_before_tiles" && f["rule"] == "barrier-divergence")
        .unwrap_or_else(|| panic!("{set:?}"));
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains("must not read what the exited threads would have written")
            && m.contains("no thread takes this exit if `i` stays below `n` in every launch"),
        "{f}"
    );
}

#[test]
fn a_race_that_needs_a_larger_block_than_any_launch_gives_is_a_conditional_warning() {
    let (set, all) = findings_in("tests/fixtures/sync_blocksize");
    // No launch site: the overlap needs blockDim.x >= 257, so the message
    // is conditional on the launch and not an error.
    assert!(
        has(&set, "packed_tables", "shared-race", "warning"),
        "{set:?}"
    );
    let f = all
        .iter()
        .find(|f| f["function"] == "packed_tables")
        .unwrap();
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains("if the kernel is launched with a block that large"),
        "{m}"
    );
    assert!(m.contains("blockDim.x ≥ 257"), "{m}");
    // Launched with 512 threads: a race as launched, an error.
    assert!(
        has(&set, "packed_tables_big", "shared-race", "error"),
        "{set:?}"
    );
}

/// Issue 8 audit #8 (session 7): accesses through a thread's own row
/// (`p = &a[tid * s]`, `a[tid * s + j]`) never meet another thread's when
/// their index is provably in `[0, s)` (a loop bound, a guard, a modulo);
/// otherwise the finding names that exact condition.
#[test]
fn thread_private_rows_are_recognised() {
    let (set, all) = findings_in("tests/fixtures/sync_rows");
    for clean in ["rows_in_range", "rows_direct"] {
        assert!(none_in(&set, clean), "{clean}: {all:#?}");
    }
    let assumed: Vec<&serde_json::Value> = all
        .iter()
        .filter(|f| f["function"] == "rows_assumed")
        .collect();
    assert!(!assumed.is_empty(), "{all:#?}");
    for f in &assumed {
        let m = f["message"].as_str().unwrap();
        assert_eq!(f["severity"], "note", "{m}");
        assert!(
            m.contains("its own row of `width` elements of `scratch`"),
            "{m}"
        );
        assert!(m.contains("0 <= `last` < `width`"), "{m}");
        assert!(m.contains("0 <= `bucket[tid + n]` < `width`"), "{m}");
    }
    let control: Vec<&serde_json::Value> = all
        .iter()
        .filter(|f| f["function"] == "rows_neighbour")
        .collect();
    assert!(!control.is_empty(), "{all:#?}");
    assert!(
        control
            .iter()
            .all(|f| !f["message"].as_str().unwrap().contains("own row")),
        "{control:#?}"
    );
}

/// Issue 8 audit #13 (session 7): a launch whose block size is a parameter
/// of the launching host function takes the value every caller in the file
/// passes (a local initialised to a macro); then the witness needing 257
/// threads is impossible. Callers that disagree leave it unknown.
#[test]
fn launch_dimensions_resolve_through_the_callers_of_the_launching_function() {
    let (set, all) = findings_in("tests/fixtures/sync_callers");
    assert!(none_in(&set, "tables_one_caller"), "{all:#?}");
    assert!(
        has(&set, "tables_two_callers", "shared-race", "warning"),
        "{all:#?}"
    );
}
