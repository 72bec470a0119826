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
