//! The simulator against counts computed by hand on small kernels.

use super::simulate::{SimConfig, SimError, simulate};
use crate::facts::cost::CostModel;
use crate::ir::Function;

fn lower(src: &str) -> Function {
    crate::frontend::lower_last(src)
}

fn cfg(block: u32, grid: u32, scalars: &[(&str, f64)]) -> SimConfig {
    SimConfig {
        block: [block, 1, 1],
        grid: [grid, 1, 1],
        scalars: scalars.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..SimConfig::default()
    }
}

const VECTOR_ADD: &str = "__global__ void add(float *a, float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}";

#[test]
fn steps_and_divergence_of_straight_line_code() {
    // decl: 1 + 1 + (1 + 1 + 1) = 5; if: (1 + 1 + 1) + 1 = 4 (lanes 16..31
    // true, 0..15 false: one divergence); `x = 0`: 1 + 1 = 2, in the warp.
    let f = lower("__global__ void k(int *a) { int x = threadIdx.x + 1; if (x > 16) x = 0; }");
    let r = simulate(&f, &cfg(32, 1, &[])).unwrap();
    assert_eq!(r.total, [0, 0, 1, 11]);
    assert_eq!(r.warps.len(), 1);
}

#[test]
fn assignment_values_cost_the_expression_that_stands_for_them() {
    // As RaCUDA's front end, `y = x = x + 1` is `x = x + 1; y = x + 1`:
    // 2 × (1 + 3), after two declarations of 3.
    let f = lower("__global__ void k(int *a) { int x = 0; int y = 0; y = x = x + 1; }");
    assert_eq!(simulate(&f, &cfg(32, 1, &[])).unwrap().total[3], 14);
    // `int z = i++` is `i = i + 1; int z = i - 1` (4 + 1 + 4), `int w = ++i`
    // is `i = i + 1; int w = i` (4 + 1 + 2), `i++;` alone is `i = i + 1` (4).
    let f = lower("__global__ void k(int *a) { int i = 0; int z = i++; int w = ++i; i++; }");
    assert_eq!(
        simulate(&f, &cfg(32, 1, &[])).unwrap().total[3],
        3 + 9 + 7 + 4
    );
    // Shared: `m = m + s[t + 32]` costs 1 + (1 + (3 + 1) + 1) = 7 (one
    // wavefront), the store `s[t] = m + s[t + 32]` (1 + 1) + 6 = 8; `int v =
    // (m += 2)` is `m = m + 2; int v = m + 2` (4 + 1 + 4).
    let f = lower(
        "__global__ void k(int *a) { __shared__ int s[64]; int m = 0;
         s[threadIdx.x] = m = m + s[threadIdx.x + 32]; int v = (m += 2); }",
    );
    assert_eq!(
        simulate(&f, &cfg(32, 1, &[])).unwrap().total[3],
        1 + 3 + 7 + 8 + 9
    );
}

#[test]
fn vector_add_sectors_and_divergence_per_warp() {
    // Block of 64, n = 40: warp 0 has 32 active lanes (4 sectors of 32 B for
    // each of a, b, c; no divergence); warp 1 has 8 (1 sector each; the test
    // splits it once).
    let f = lower(VECTOR_ADD);
    let r = simulate(&f, &cfg(64, 1, &[("n", 40.0)])).unwrap();
    assert_eq!(r.warps[0].counts[0], 12);
    assert_eq!(r.warps[1].counts[0], 3);
    assert_eq!(r.total[0], 15);
    assert_eq!(r.total[1], 0);
    assert_eq!(r.warps[0].counts[2], 0);
    assert_eq!(r.warps[1].counts[2], 1);
    // Two blocks: block 1 covers i = 64..127, all beyond n (no access, no
    // divergence), so the totals do not change.
    let r = simulate(&f, &cfg(64, 2, &[("n", 40.0)])).unwrap();
    assert_eq!(r.total[0], 15);
    assert_eq!(r.total[2], 1);
    assert_eq!(r.warps.len(), 4);
}

#[test]
fn cost_model_keys_change_the_counts() {
    // Warps of 16 lanes, 64-byte sectors: each warp reads 64 B per array,
    // one sector; 2 warps × 3 arrays.
    let f = lower(VECTOR_ADD);
    let mut c = cfg(32, 1, &[("n", 32.0)]);
    c.cost = CostModel {
        warp: 16,
        sector_bytes: 64,
        line_bytes: 128,
        ..CostModel::default()
    };
    let r = simulate(&f, &c).unwrap();
    assert_eq!(r.warps.len(), 2);
    assert_eq!(r.total[0], 6);
    c.cost = CostModel::default();
    assert_eq!(simulate(&f, &c).unwrap().total[0], 12);
}

#[test]
fn bank_conflicts_follow_the_word_stride() {
    // Stride k words: 32 lanes on 32 banks of 4 B hit gcd(k, 32)-fold the
    // same bank, so one warp's access takes gcd(k, 32) wavefronts where one
    // would do: gcd(k, 32) - 1 extra.
    let f = lower(
        "__global__ void k(float *o, int k) { __shared__ float s[2048]; s[threadIdx.x * k] = 1.0f; }",
    );
    for (k, extra) in [(1, 0), (2, 1), (3, 0), (4, 3), (16, 15), (32, 31), (64, 31)] {
        let r = simulate(&f, &cfg(32, 1, &[("k", k as f64)])).unwrap();
        assert_eq!(r.total[1], extra, "stride {k}");
    }
}

#[test]
fn a_thread_dependent_loop_diverges_at_every_test_but_the_last() {
    // Lane t leaves at the test j = t; tests j = 0..=30 find both a leaving
    // and a staying lane, the test j = 31 only lane 31.
    let f = lower("__global__ void k(int *a) { for (int j = 0; j < threadIdx.x; j++) { } }");
    let r = simulate(&f, &cfg(32, 1, &[])).unwrap();
    assert_eq!(r.total[2], 31);
}

#[test]
fn a_launch_too_big_for_the_budget_is_an_error_not_a_hang() {
    let f = lower("__global__ void k(int n) { for (int j = 0; j < n; j++) { } }");
    let mut c = cfg(32, 1, &[("n", 1e9)]);
    c.max_steps = 10_000;
    assert_eq!(simulate(&f, &c), Err(SimError::Budget(10_000)));
}

#[test]
fn a_bad_launch_is_a_clear_error() {
    let f = lower(VECTOR_ADD);
    assert!(matches!(
        simulate(&f, &cfg(2048, 1, &[])),
        Err(SimError::Invalid(_))
    ));
}
