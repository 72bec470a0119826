//! Arguments and parameters across calls: what a caller passes to each
//! device function it calls (thread dependence, affine form, and for
//! pointers the memory space and element offset), and the memory space of
//! a device function's accesses once its callers agree on a pointer
//! parameter's space.

use super::affine::{self, Affine};
use super::stride::AffineCx;
use super::uniformity::Uniformity;
use super::{CallArgs, ParamFacts};
use crate::ir::{Access, BinOp, ExprId, ExprKind, Function, MemSpace, UnOp};

/// The memory space of every access of `f`: as lowered, except that an
/// access through a pointer parameter of unknown (`generic`) space takes the
/// space every caller passes, when the callers also agree on where in that
/// memory the pointer starts (its offset form is known).
pub fn access_spaces(f: &Function, params: &ParamFacts) -> Vec<MemSpace> {
    f.accesses
        .iter()
        .map(|a| resolved_space(f, a, params).unwrap_or(a.space))
        .collect()
}

fn resolved_space(f: &Function, a: &Access, params: &ParamFacts) -> Option<MemSpace> {
    if a.space != MemSpace::Generic {
        return None;
    }
    let i = f.var(a.var?).param_position? as usize;
    params.pointer_forms.get(i)?.as_ref()?;
    *params.spaces.get(i)?
}

/// The number of threads of the cooperative-groups tile that expression
/// `e` names, when known: a variable declared `thread_block_tile<N>` or set
/// from `tiled_partition<N>(…)` / `tiled_partition(g, N)` with a literal
/// `N`, or a `thread_group` parameter every caller passes such a tile for.
pub fn group_size(f: &Function, params: &ParamFacts, e: ExprId) -> Option<i64> {
    let ExprKind::Var(v) = &f.expr(e).kind else {
        return None;
    };
    let var = f.var(*v);
    if let Some(p) = var.param_position
        && let Some(n) = params.groups.get(p as usize).copied().flatten()
    {
        return Some(n);
    }
    let mut text = var.ty.render();
    for s in &f.stmts {
        if let crate::ir::StmtKind::Decl {
            var: d,
            init: Some(i),
        } = &s.kind
            && d == v
        {
            text.push(' ');
            text.push_str(&f.expr_text(*i));
        }
    }
    let lit = |t: &str| -> Option<i64> {
        let t = t.trim().trim_end_matches(['u', 'U', 'l', 'L']);
        let n = t.parse::<i64>().ok()?;
        (n > 0 && n <= 1024).then_some(n)
    };
    for marker in ["thread_block_tile<", "tiled_partition<"] {
        if let Some(i) = text.find(marker) {
            let rest = &text[i + marker.len()..];
            return lit(&rest[..rest.find('>')?]);
        }
    }
    let i = text.find("tiled_partition(")?;
    let rest = &text[i + "tiled_partition(".len()..];
    let end = rest.find(')')?;
    lit(rest[..end].rsplit(',').next()?)
}

/// (issue 11) Whether statement `s` runs in at most one thread of the
/// block: an enclosing condition `x == v` that holds there, with `x` the
/// thread's index in a 1-D block (`threadIdx.x`, plus a thread-invariant
/// part) and `v` the same for every thread of the block.
fn single_thread_site(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &super::LaunchDims,
    s: crate::ir::StmtId,
) -> bool {
    let [_, y, z] = launch.block;
    if !(y == Some(1) && z == Some(1)) {
        return false;
    }
    let mut conds = Vec::new();
    let Some(body) = f.body else { return false };
    if !enclosing(f, body, s, &mut conds, 0) {
        return false;
    }
    let injective = |e: ExprId| thread_x_plus_const(f, e, 0);
    let uniform = |e: ExprId| u.is_uniform(e.0) && cx.form(e).is_invariant();
    let mut stack: Vec<ExprId> = conds;
    while let Some(c) = stack.pop() {
        match &f.expr(c).kind {
            ExprKind::Binary(BinOp::LogAnd, a, b) => {
                stack.push(*a);
                stack.push(*b);
            }
            ExprKind::Binary(BinOp::Eq, a, b)
                if (injective(*a) && uniform(*b)) || (injective(*b) && uniform(*a)) =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// (issue 8, session 6, V5) Whether statement `s` runs in at most one lane
/// of each warp: an enclosing condition (taken on its `then` side) that
/// [`super::divergence::single_thread_cond`] recognises (`lane == 0`,
/// `threadIdx.x % 32 == 0`, `threadIdx.x == 0`).
fn single_lane_site(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &super::LaunchDims,
    s: crate::ir::StmtId,
) -> bool {
    let mut conds = Vec::new();
    let Some(body) = f.body else { return false };
    enclosing(f, body, s, &mut conds, 0)
        && conds
            .iter()
            .any(|c| super::divergence::single_thread_cond(f, cx, launch, *c))
}

/// Whether `e` is `threadIdx.x` plus a constant (through casts and locals
/// set once): distinct threads of a 1-D block have distinct values.
fn thread_x_plus_const(f: &Function, e: ExprId, depth: u32) -> bool {
    if depth > 16 {
        return false;
    }
    let c = |x: ExprId| super::barriers::const_value(f, x).is_some();
    match &f.expr(e).kind {
        ExprKind::Builtin(crate::ir::Builtin::ThreadIdx(crate::ir::Dim::X)) => true,
        ExprKind::Cast(_, a) => thread_x_plus_const(f, *a, depth + 1),
        ExprKind::Var(v) => super::barriers::single_def(f, v.0)
            .is_some_and(|d| thread_x_plus_const(f, d, depth + 1)),
        ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) if c(*b) => {
            thread_x_plus_const(f, *a, depth + 1)
        }
        ExprKind::Binary(BinOp::Add, a, b) if c(*a) => thread_x_plus_const(f, *b, depth + 1),
        _ => false,
    }
}

/// Collect the conditions that hold (the `then` side) around `target`.
fn enclosing(
    f: &Function,
    s: crate::ir::StmtId,
    target: crate::ir::StmtId,
    out: &mut Vec<ExprId>,
    depth: u32,
) -> bool {
    if s == target {
        return true;
    }
    if depth > 200 {
        return false;
    }
    if let crate::ir::StmtKind::If { cond, then, els } = &f.stmt(s).kind {
        if enclosing(f, *then, target, out, depth + 1) {
            out.push(*cond);
            return true;
        }
        return els.is_some_and(|e| enclosing(f, e, target, out, depth + 1));
    }
    f.child_stmts(s)
        .into_iter()
        .any(|c| enclosing(f, c, target, out, depth + 1))
}

/// The arguments of every call of `f`.
pub fn call_args(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    params: &ParamFacts,
    active: &super::lanes::ActiveLanes,
    launch: &super::LaunchDims,
) -> Vec<CallArgs> {
    let mut out = Vec::new();
    for c in &f.calls {
        let ExprKind::Call { args, .. } = &f.expr(c.expr).kind else {
            continue;
        };
        let mut ca = CallArgs {
            callee: c.callee.clone(),
            dims: Vec::new(),
            forms: Vec::new(),
            spaces: Vec::new(),
            pointer_forms: Vec::new(),
            lanes: active.tests_at(c.stmt),
            groups: Vec::new(),
            single_thread: single_thread_site(f, u, cx, launch, c.stmt),
            single_lane: single_lane_site(f, cx, launch, c.stmt),
        };
        for a in args {
            ca.groups.push(group_size(f, params, *a));
            ca.dims
                .push(u.expr_dims.get(a.0 as usize).copied().unwrap_or(0));
            ca.forms.push(cx.form(*a));
            let (space, offset) = pointer(f, cx, params, *a, 0);
            ca.spaces.push(space);
            ca.pointer_forms.push(offset);
        }
        out.push(ca);
    }
    out
}

/// The memory space a pointer expression points into and its offset (in
/// elements of what it points to) from the start of that memory, as far as
/// they are known.
fn pointer(
    f: &Function,
    cx: &AffineCx<'_>,
    params: &ParamFacts,
    e: ExprId,
    depth: u32,
) -> (Option<MemSpace>, Option<Affine>) {
    if depth > 16 {
        return (None, None);
    }
    match &f.expr(e).kind {
        ExprKind::Var(v) => {
            let var = f.var(*v);
            if let Some(i) = var.param_position {
                let i = i as usize;
                return match var.space {
                    Some(MemSpace::Generic) | None => (
                        params.spaces.get(i).copied().flatten(),
                        params.pointer_forms.get(i).cloned().flatten(),
                    ),
                    Some(s) => (Some(s), Some(affine::constant(0))),
                };
            }
            if var.ty.is_indexable() && !matches!(var.ty, crate::ir::Type::Pointer(_)) {
                // An array: its own start.
                return (var.space, Some(affine::constant(0)));
            }
            match super::barriers::single_def(f, v.0) {
                Some(init) => pointer(f, cx, params, init, depth + 1),
                None => (var.space.filter(|s| *s != MemSpace::Generic), None),
            }
        }
        ExprKind::Cast(_, a) => (pointer(f, cx, params, *a, depth + 1).0, None),
        ExprKind::Unary(UnOp::AddrOf, x) => match &f.expr(*x).kind {
            ExprKind::Index { base, index } => {
                let (space, off) = pointer(f, cx, params, *base, depth + 1);
                (space, off.map(|o| o.add_form(&cx.form(*index))))
            }
            _ => (None, None),
        },
        ExprKind::Binary(BinOp::Add, a, b) => {
            let (space, off) = pointer(f, cx, params, *a, depth + 1);
            if space.is_some() {
                return (space, off.map(|o| o.add_form(&cx.form(*b))));
            }
            let (space, off) = pointer(f, cx, params, *b, depth + 1);
            (space, off.map(|o| o.add_form(&cx.form(*a))))
        }
        _ => (None, None),
    }
}
