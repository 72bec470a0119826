//! issue 8, session 12: integer arguments every launch passes as the same
//! constant (through host callers, two levels up), and conditions that the
//! launch decides for every thread (audits 20261209 #23, 20261211 #24,
//! #49, #50). Fixture: tests/fixtures/findings/launch_s12/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/launch_s12/kernels.cu"]))
}

fn of(function: &str, rule: &str) -> Vec<&'static serde_json::Value> {
    common::rule_in(findings(), function, rule)
}

/// `C = 50257` reaches the launch through `dispatch` and `launch_rows`:
/// `tid >= C` is never true with at most 1024 threads, so neither the
/// barrier, the branch nor the race it would allow is reported; the same
/// kernel with a C the host does not fix keeps all three.
#[test]
fn an_exit_the_launch_constants_never_take_is_no_divergence() {
    for rule in ["barrier-divergence", "divergent-branch", "shared-race"] {
        assert!(
            of("rows_exit_never", rule).is_empty(),
            "{rule}: {:#?}",
            findings()
        );
        assert_eq!(
            of("rows_exit_unknown", rule).len(),
            1,
            "{rule}: {:#?}",
            findings()
        );
    }
}

/// The grid (65536 / 256 - 1 blocks of 256) covers fewer than `len =
/// 65536` threads: `id > len` never holds.
#[test]
fn an_exit_past_the_grid_is_never_taken() {
    assert!(
        of("add_past_grid", "barrier-divergence").is_empty(),
        "{:#?}",
        findings()
    );
}

/// `row = blockIdx.x * warpsPerBlock + threadIdx.x / warpSize` is a warp
/// index plus a uniform value: `row >= N` leaves whole warps.
#[test]
fn a_warp_index_plus_a_uniform_offset_is_warp_uniform() {
    assert!(
        of("warp_per_row", "barrier-divergence").is_empty(),
        "{:#?}",
        findings()
    );
}

/// With `Bc = 32` known and `d` not, `(y * d) + x` is not one free value a
/// race witness may choose: it changes every iteration.
#[test]
fn a_loop_varying_index_is_not_a_free_symbol_for_races() {
    assert!(of("tiles", "shared-race").is_empty(), "{:#?}", findings());
    // The constant tile width makes the stride exact.
    let s = of("tiles", "shared-bank-conflict");
    assert!(
        s.iter().any(|f| f["message"]
            .as_str()
            .unwrap()
            .contains("32-way bank conflict (word stride 32 between lanes")),
        "{s:#?}"
    );
}

/// A `dim3` read in another's value both ways round does not recurse for
/// ever (the whole check finishes, and the kernel is still analysed).
#[test]
fn a_cycle_of_dim3_members_terminates() {
    assert!(
        findings()
            .iter()
            .all(|f| f["function"] != "cycle_target" || f["rule"] != "analysis-incomplete")
    );
}
