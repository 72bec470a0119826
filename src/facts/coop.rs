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
