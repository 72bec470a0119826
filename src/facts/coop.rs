//! Cooperative groups and simple variable definitions, as the divergence
//! and single-thread analyses need them (issue 8, class 2): which group a
//! variable names (`cg::this_thread_block()`, `cg::tiled_partition<N>(…)`,
//! `thread_block_tile<N>`), and the plain definitions of a local.

use crate::ir::{ExprId, ExprKind, Function, StmtKind, Type, VarId};

/// The expressions a local variable is defined from: its initialiser and
/// the right-hand sides of plain assignments. Empty when any definition is
/// not a plain one (compound assignment, `++`, address taken as an
/// argument is not tracked) or when the variable is a parameter.
pub fn var_definitions(f: &Function, v: VarId) -> Vec<ExprId> {
    if f.vars
        .get(v.0 as usize)
        .is_none_or(|x| x.param_position.is_some())
    {
        return Vec::new();
    }
    let mut out = Vec::new();
    for s in &f.stmts {
        if let StmtKind::Decl { var, init: Some(e) } = &s.kind
            && *var == v
        {
            out.push(*e);
        }
    }
    let is_v = |e: ExprId| matches!(f.expr(e).kind, ExprKind::Var(x) if x == v);
    for e in &f.exprs {
        match &e.kind {
            ExprKind::Assign { op: None, lhs, rhs } if is_v(*lhs) => out.push(*rhs),
            ExprKind::Assign {
                op: Some(_), lhs, ..
            } if is_v(*lhs) => return Vec::new(),
            ExprKind::IncDec { target, .. } if is_v(*target) => return Vec::new(),
            ExprKind::Unary(crate::ir::UnOp::AddrOf, x) if is_v(*x) => return Vec::new(),
            _ => {}
        }
    }
    out
}

/// The number of threads of the cooperative group `g` names, when it is a
/// `tiled_partition<N>` / `thread_block_tile<N>` (`Some(N)`); `None` for a
/// thread block, the grid, or anything not recognised.
pub fn group_size(f: &Function, g: Option<ExprId>) -> Option<i64> {
    let g = g?;
    let tile = |text: &str| -> Option<i64> {
        let i = text
            .find("tiled_partition<")
            .map(|i| i + "tiled_partition<".len())
            .or_else(|| {
                text.find("thread_block_tile<")
                    .map(|i| i + "thread_block_tile<".len())
            })?;
        let n: String = text[i..]
            .chars()
            .skip_while(|c| c.is_whitespace())
            .take_while(|c| c.is_ascii_digit())
            .collect();
        n.parse().ok()
    };
    match &f.expr(g).kind {
        ExprKind::Var(v) => {
            let var = f.vars.get(v.0 as usize)?;
            if let Type::Named(t) | Type::Record { name: t, .. } = &var.ty
                && let Some(n) = tile(t)
            {
                return Some(n);
            }
            var_definitions(f, *v)
                .iter()
                .find_map(|d| tile(&f.expr_text(*d)))
        }
        _ => tile(&f.expr_text(g)),
    }
}

/// A cooperative group a method is called on (issue 8, class 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// `this_thread_block()` / `thread_block`.
    Block,
    /// `this_grid()` / `grid_group`.
    Grid,
    /// `tiled_partition<N>` / `thread_block_tile<N>`.
    Tile(i64),
}

/// The group `g` names, when recognised: from the variable's type, its
/// definitions (`auto b = cg::this_thread_block();`) or a direct call.
pub fn group_of(f: &Function, g: ExprId) -> Option<Group> {
    if let Some(n) = group_size(f, Some(g)) {
        return Some(Group::Tile(n));
    }
    let kind = |text: &str| -> Option<Group> {
        if text.contains("this_thread_block") || text.ends_with("thread_block") {
            Some(Group::Block)
        } else if text.contains("this_grid") || text.ends_with("grid_group") {
            Some(Group::Grid)
        } else {
            None
        }
    };
    match &f.expr(g).kind {
        ExprKind::Var(v) => {
            let var = f.vars.get(v.0 as usize)?;
            if let Type::Named(t) | Type::Record { name: t, .. } = &var.ty
                && let Some(k) = kind(t.trim())
            {
                return Some(k);
            }
            let defs = var_definitions(f, *v);
            let kinds: Vec<Option<Group>> = defs.iter().map(|d| kind(&f.expr_text(*d))).collect();
            match kinds.first() {
                Some(Some(k)) if kinds.iter().all(|x| *x == Some(*k)) => Some(*k),
                _ => None,
            }
        }
        ExprKind::Call { callee, .. } => kind(callee),
        _ => None,
    }
}

/// A recognised group method without arguments: `(group, method)`.
pub fn group_method(f: &Function, e: ExprId) -> Option<(Group, &str)> {
    match &f.expr(e).kind {
        ExprKind::Call {
            callee,
            receiver: Some(r),
            args,
        } if args.is_empty() => {
            let m = callee.as_str();
            matches!(
                m,
                "thread_rank" | "meta_group_rank" | "num_threads" | "size" | "meta_group_size"
            )
            .then_some(())?;
            Some((group_of(f, *r)?, m))
        }
        _ => None,
    }
}

/// For a method call on a cooperative group (`g.thread_rank()`) or the
/// free-function spelling (`cg::thread_rank(g)`): the method name and the
/// group expression.
pub fn group_call(f: &Function, e: ExprId) -> Option<(&str, Option<ExprId>)> {
    let ExprKind::Call {
        callee,
        receiver,
        args,
    } = &f.expr(e).kind
    else {
        return None;
    };
    let base = callee
        .rsplit(['.', ':'])
        .next()
        .unwrap_or(callee)
        .trim_start_matches('>');
    let group = receiver.or_else(|| args.first().copied());
    Some((base, group))
}
