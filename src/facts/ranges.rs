//! Value ranges of integer expressions under a launch, to decide conditions
//! that no thread of any launch can make true (or false).
//!
//! (issue 8, session 12; audits 20261209 #23, 20261211 #24/#49/#50) An exit
//! `if (tid >= C) return;` with `C = 50257` passed by every launch, or
//! `if (id > len) return;` where the grid covers fewer than `len` threads,
//! is never taken: the barrier after it is not divergent, and a branch on
//! such a condition splits no warp.
//!
//! Ranges are closed intervals over `i128`. Built-ins take their launch
//! values (or the hardware limits: `threadIdx.x < 1024`, `blockIdx.x <
//! 2^31 - 1`, `blockIdx.y/z < 65535`); a local with one definition takes
//! its initialiser's range. Anything else (parameters, loads, loop
//! variables, calls) is unknown, and so is any subtraction that can go
//! below zero (unsigned arithmetic would wrap).

use super::barriers::{LaunchDims, single_def};
use crate::ir::{BinOp, Builtin, Dim, ExprId, ExprKind, Function, UnOp};

/// A closed interval.
pub type Range = (i128, i128);

const MAX_DEPTH: u32 = 24;

fn dim_index(d: Dim) -> usize {
    match d {
        Dim::X => 0,
        Dim::Y => 1,
        Dim::Z => 2,
    }
}

/// The range of values `e` can take in any thread of any launch of `f`,
/// when it is known.
pub fn value_range(f: &Function, e: ExprId, launch: &LaunchDims) -> Option<Range> {
    range(f, e, launch, 0)
}

fn block_range(launch: &LaunchDims, i: usize) -> Range {
    match launch.block[i] {
        Some(b) => (i128::from(b), i128::from(b)),
        None => (1, if i == 2 { 64 } else { 1024 }),
    }
}

fn grid_range(launch: &LaunchDims, i: usize) -> Range {
    match launch.grid[i] {
        Some(g) => (i128::from(g), i128::from(g)),
        None => (1, if i == 0 { (1 << 31) - 1 } else { 65535 }),
    }
}

fn range(f: &Function, e: ExprId, launch: &LaunchDims, depth: u32) -> Option<Range> {
    if depth > MAX_DEPTH {
        return None;
    }
    let rec = |x: ExprId| range(f, x, launch, depth + 1);
    match &f.expr(e).kind {
        ExprKind::Int(v) => Some((i128::from(*v), i128::from(*v))),
        ExprKind::Bool(b) => Some((i128::from(*b), i128::from(*b))),
        ExprKind::SizeOf(Some(n)) => Some((i128::from(*n), i128::from(*n))),
        ExprKind::Builtin(b) => Some(match b {
            Builtin::WarpSize => (32, 32),
            Builtin::ThreadIdx(d) => (0, block_range(launch, dim_index(*d)).1 - 1),
            Builtin::BlockIdx(d) => (0, grid_range(launch, dim_index(*d)).1 - 1),
            Builtin::BlockDim(d) => block_range(launch, dim_index(*d)),
            Builtin::GridDim(d) => grid_range(launch, dim_index(*d)),
        }),
        ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => rec(*a),
        ExprKind::Unary(UnOp::Neg, a) => {
            let (lo, hi) = rec(*a)?;
            // Negative values: the type may be unsigned.
            (lo == 0 && hi == 0).then_some((0, 0))
        }
        ExprKind::Var(v) => single_def(f, v.0).and_then(rec),
        ExprKind::Cond(_, a, b) => {
            let (x, y) = (rec(*a)?, rec(*b)?);
            Some((x.0.min(y.0), x.1.max(y.1)))
        }
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (rec(*a)?, rec(*b)?);
            binary(*op, x, y)
        }
        ExprKind::Call { callee, args, .. } if args.len() == 2 => {
            let name = callee.rsplit("::").next().unwrap_or(callee);
            let (x, y) = (rec(args[0])?, rec(args[1])?);
            match name {
                "min" | "umin" => Some((x.0.min(y.0), x.1.min(y.1))),
                "max" | "umax" => Some((x.0.max(y.0), x.1.max(y.1))),
                _ => None,
            }
        }
        _ => None,
    }
}

fn binary(op: BinOp, x: Range, y: Range) -> Option<Range> {
    let corners = |g: fn(i128, i128) -> Option<i128>| -> Option<Range> {
        let v = [g(x.0, y.0)?, g(x.0, y.1)?, g(x.1, y.0)?, g(x.1, y.1)?];
        Some((*v.iter().min()?, *v.iter().max()?))
    };
    let out = match op {
        BinOp::Add => (x.0 + y.0, x.1 + y.1),
        BinOp::Sub => {
            let r = (x.0 - y.1, x.1 - y.0);
            if r.0 < 0 {
                return None;
            }
            r
        }
        BinOp::Mul if x.0 >= 0 && y.0 >= 0 => corners(|a, b| a.checked_mul(b))?,
        BinOp::Div if x.0 >= 0 && y.0 > 0 => (x.0 / y.1, x.1 / y.0),
        BinOp::Rem if x.0 >= 0 && y.0 > 0 => (0, x.1.min(y.1 - 1)),
        BinOp::Shr if x.0 >= 0 && y.0 >= 0 && y.1 < 64 => (x.0 >> y.1, x.1 >> y.0),
        BinOp::Shl if x.0 >= 0 && y.0 >= 0 && y.1 < 64 => {
            corners(|a, b| a.checked_mul(1i128.checked_shl(u32::try_from(b).ok()?)?))?
        }
        BinOp::BitAnd if x.0 >= 0 && y.0 >= 0 => (0, x.1.min(y.1)),
        _ => return None,
    };
    // Keep to values a 64-bit integer holds.
    (out.0 >= i128::from(i64::MIN) && out.1 <= i128::from(i64::MAX)).then_some(out)
}

/// The value condition `c` has in every thread of every launch, when the
/// ranges decide it (`tid >= 50257` with at most 1024 threads: always
/// false).
pub fn decided(f: &Function, c: ExprId, launch: &LaunchDims) -> Option<bool> {
    decided_at(f, c, launch, 0)
}

fn decided_at(f: &Function, c: ExprId, launch: &LaunchDims, depth: u32) -> Option<bool> {
    if depth > MAX_DEPTH {
        return None;
    }
    let rec = |x: ExprId| decided_at(f, x, launch, depth + 1);
    match &f.expr(c).kind {
        ExprKind::Bool(b) => Some(*b),
        ExprKind::Unary(UnOp::Not, a) => rec(*a).map(|b| !b),
        ExprKind::Cast(_, a) => rec(*a),
        ExprKind::Binary(BinOp::LogAnd, a, b) => match (rec(*a), rec(*b)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        ExprKind::Binary(BinOp::LogOr, a, b) => match (rec(*a), rec(*b)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        ExprKind::Binary(op, a, b) => {
            let x = value_range(f, *a, launch)?;
            let y = value_range(f, *b, launch)?;
            compare(*op, x, y)
        }
        _ => None,
    }
}

/// `x op y` for every pair of values of two ranges, when all pairs agree.
fn compare(op: BinOp, x: Range, y: Range) -> Option<bool> {
    let lt = |a: Range, b: Range| {
        if a.1 < b.0 {
            Some(true)
        } else if a.0 >= b.1 {
            Some(false)
        } else {
            None
        }
    };
    match op {
        BinOp::Lt => lt(x, y),
        BinOp::Gt => lt(y, x),
        BinOp::Ge => lt(x, y).map(|b| !b),
        BinOp::Le => lt(y, x).map(|b| !b),
        BinOp::Eq | BinOp::Ne => {
            let eq = if x.1 < y.0 || y.1 < x.0 {
                Some(false)
            } else if x.0 == x.1 && y.0 == y.1 {
                Some(x.0 == y.0)
            } else {
                None
            };
            if op == BinOp::Eq { eq } else { eq.map(|b| !b) }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_decides_only_separated_ranges() {
        assert_eq!(compare(BinOp::Ge, (0, 1023), (50257, 50257)), Some(false));
        assert_eq!(compare(BinOp::Lt, (0, 1023), (1024, 1024)), Some(true));
        assert_eq!(compare(BinOp::Lt, (0, 1023), (1023, 1023)), None);
        assert_eq!(compare(BinOp::Gt, (0, 65279), (65536, 65536)), Some(false));
        assert_eq!(compare(BinOp::Eq, (0, 5), (6, 9)), Some(false));
        assert_eq!(compare(BinOp::Ne, (3, 3), (3, 3)), Some(false));
    }

    #[test]
    fn subtraction_that_can_go_negative_is_unknown() {
        assert_eq!(binary(BinOp::Sub, (0, 10), (1, 1)), None);
        assert_eq!(binary(BinOp::Sub, (5, 10), (1, 1)), Some((4, 9)));
        assert_eq!(binary(BinOp::Mul, (0, 254), (256, 256)), Some((0, 65024)));
    }
}
