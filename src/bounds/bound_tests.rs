//! Bounds of small kernels: exact where the cost is exact.

use super::exec::{Exec, Lanes, Shape};
use super::kernel::{Limits, Status, kernel_bounds};
use crate::facts::cost::CostModel;
use crate::facts::{Analysis, LaunchDims};
use crate::ir::Function;

fn lower(src: &str) -> Function {
    crate::frontend::lower_last(src)
}

#[test]
fn block_stride_loop_gets_a_bound() {
    let f = lower(
        "__global__ void k(int *out) {
    __shared__ int local[256];
    for (int j = threadIdx.x; j < 256; j += blockDim.x) {
        local[j] = 0;
    }
}",
    );
    let a = Analysis::compute(&f, LaunchDims::default(), &Default::default());
    let shape = Shape::default();
    let b = Exec::run(&f, CostModel::default(), &shape, Lanes::Symbolic, &a.loops).unwrap();
    assert!(b.prog.size() > 1);
    let kb = kernel_bounds(&f, &a, &CostModel::default(), &shape, &Limits::default());
    for x in &kb.bounds {
        eprintln!(
            "{:?} {:?} {:?} {:?}",
            x.metric,
            x.status,
            x.expr.as_ref().map(|e| e.to_string()),
            x.reason
        );
    }
    assert!(kb.bounds.iter().all(|x| x.status == Status::Ok));
}

#[test]
fn assignment_values_bound_exactly_as_simulated() {
    // Straight-line code with chained and value-used assignments: the
    // per-warp steps bound equals the simulator's count (see sim_tests).
    use super::kernel::Scope;
    use super::simulate::{SimConfig, simulate};
    for src in [
        "__global__ void k(int *a) { int x = 0; int y = 0; y = x = x + 1; }",
        "__global__ void k(int *a) { int i = 0; int z = i++; int w = ++i; i++; }",
        "__global__ void k(int *a) { __shared__ int s[64]; int m = 0;
         s[threadIdx.x] = m = m + s[threadIdx.x + 32]; int v = (m += 2); a[0] = (m, m = 1); }",
    ] {
        let f = lower(src);
        let sim = simulate(&f, &SimConfig::default()).unwrap();
        let a = Analysis::compute(&f, LaunchDims::default(), &Default::default());
        let shape = Shape {
            block: Some([32, 1, 1]),
            grid: Some([1, 1, 1]),
            ..Shape::default()
        };
        let kb = kernel_bounds(&f, &a, &CostModel::default(), &shape, &Limits::default());
        let steps = kb
            .bounds
            .iter()
            .find(|b| b.metric == super::Metric::Steps && b.scope == Scope::PerWarp)
            .and_then(|b| b.expr.as_ref())
            .expect("a steps bound");
        let v = steps.eval(&Default::default()).unwrap();
        assert_eq!(v, sim.max_warp[3] as f64, "{src}: bound {steps}");
    }
}

#[test]
fn a_parameter_stride_is_aligned_when_the_parameter_is() {
    // `B[j * w + i]`: 4 sectors per warp when `w` is a multiple of 8 (32-byte
    // rows), up to 5 otherwise; the bound says so with an indicator of `w`.
    use super::kernel::Scope;
    use super::simulate::{SimConfig, simulate};
    let f = lower(
        "__global__ void k(int *A, int *B, int w, int h) {
    int i = threadIdx.x;
    for (int j = 0; j < h; j++) B[j * w + i] = A[i];
}",
    );
    let a = Analysis::compute(&f, LaunchDims::default(), &Default::default());
    let kb = kernel_bounds(
        &f,
        &a,
        &CostModel::default(),
        &Shape::default(),
        &Limits::default(),
    );
    let sectors = kb
        .bounds
        .iter()
        .find(|b| b.metric == super::Metric::Sectors && b.scope == Scope::PerWarp)
        .and_then(|b| b.expr.clone())
        .expect("a sectors bound");
    assert!(sectors.to_string().contains('w'), "{sectors}");
    for (w, exact) in [(64.0, true), (65.0, false), (8.0, true), (12.0, false)] {
        let vals: std::collections::BTreeMap<String, f64> = [
            ("w".to_string(), w),
            ("h".to_string(), 3.0),
            ("blockDim.x".to_string(), 32.0),
        ]
        .into();
        let cfg = SimConfig {
            scalars: vals.clone(),
            ..SimConfig::default()
        };
        let sim = simulate(&f, &cfg).unwrap().max_warp[0] as f64;
        let v = sectors.eval(&vals).unwrap();
        assert!(v >= sim, "w = {w}: {sectors} = {v} < {sim}");
        if exact {
            assert_eq!(v, sim, "w = {w}: {sectors}");
        }
    }
}
