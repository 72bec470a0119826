//! Constant launch dimensions from a launch site's block expression.

use super::barriers::{const_value, single_def};
use crate::ir::{ExprId, ExprKind, Function};

/// The block dimensions an expression denotes: an integer (`256`), a
/// `dim3(x, y, z)` construction, or a variable initialised with one.
pub fn block_dims(f: &Function, e: ExprId) -> [Option<u32>; 3] {
    let as_u32 = |e: ExprId| const_value(f, e).and_then(|v| u32::try_from(v).ok());
    match &f.expr(e).kind {
        ExprKind::Call { callee, args, .. } if callee == "dim3" || callee == "dim3{}" => {
            let mut out = [Some(1), Some(1), Some(1)];
            for (i, a) in args.iter().take(3).enumerate() {
                out[i] = as_u32(*a);
            }
            out
        }
        ExprKind::Var(v) => match single_def(f, v.0) {
            Some(init) => block_dims(f, init),
            None => [None; 3],
        },
        ExprKind::Cast(_, a) => block_dims(f, *a),
        _ => match as_u32(e) {
            Some(v) => [Some(v), Some(1), Some(1)],
            None => [None; 3],
        },
    }
}
