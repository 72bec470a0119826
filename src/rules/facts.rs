//! Structural facts the house rules need and the other tables lack
//! (schema v5: `loops`, `loop_stmts`, `fp64_ops`), computed from one
//! function's IR. [`function_rule_facts_with_text`] is a pure function of
//! the IR and the definition's text, carried in `db::FunctionFacts` and
//! written per function by the store ([`insert_rule_facts`],
//! [`shift_rule_facts`]).

use crate::ir::types::{ScalarType, Type};
use crate::ir::{BinOp, ExprId, ExprKind, Function, FunctionKind, StmtId, StmtKind, UnOp};
use rusqlite::{Connection, params};

/// A loop statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LoopRow {
    /// IR statement id.
    pub stmt_id: u32,
    /// `for`, `while` or `do`.
    pub kind: &'static str,
    /// 1-based first line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// 1-based last line.
    pub end_line: u32,
    /// Nesting depth (1 = outermost).
    pub depth: u32,
    /// Enclosing loop.
    pub parent: Option<u32>,
}

/// An arithmetic operation in double precision.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fp64Row {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// Operator or math function.
    pub op: String,
    /// Expression text.
    pub expr_text: String,
    /// What makes it double: literal, variable, cast, element, call.
    pub cause: &'static str,
    /// That operand's text.
    pub source: String,
}

/// The rule facts of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RuleFacts {
    /// Loops.
    pub loops: Vec<LoopRow>,
    /// (loop statement, statement run on each of its iterations).
    pub loop_stmts: Vec<(u32, u32)>,
    /// Double-precision arithmetic (kernels and device functions only).
    pub fp64: Vec<Fp64Row>,
    /// The arguments of `__launch_bounds__(…)` as written, if any.
    pub launch_bounds_args: Option<String>,
    /// The arguments of the function's kernel launches (schema v8).
    pub launch_args: Vec<LaunchArgRow>,
    /// Grid-stride loops (schema v8): statement ids of the loops whose
    /// step adds the grid's thread count to their counter.
    pub grid_stride_loops: Vec<u32>,
}

/// One argument of a kernel launch (`k<<<g, b>>>(a0, a1, …)`), with how it
/// changes over the innermost loop around the launch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LaunchArgRow {
    /// 1-based line of the launch.
    pub line: u32,
    /// The launched kernel.
    pub kernel: String,
    /// Position among the kernel's arguments (0-based, as `params.position`).
    pub position: u32,
    /// The argument as written.
    pub text: String,
    /// 1-based first line of the innermost loop around the launch.
    pub loop_line: Option<u32>,
    /// The loop assigns a variable the argument reads: it can differ
    /// between the launches of the loop.
    pub varies: bool,
    /// The argument's value at the loop's first launch, when it is a
    /// variable whose last definition before the loop is an integer
    /// constant (or the loop's own `for` initialiser), or a constant.
    pub first_value: Option<i64>,
}

/// The rule facts of `f` with `text` its definition's text, lines
/// relative to the function (1 = its first line).
pub fn function_rule_facts_with_text(f: &Function, text: &str) -> RuleFacts {
    let mut r = function_rule_facts(f, 0);
    r.launch_bounds_args = launch_bounds_decl(text);
    r
}

/// The rule facts of `f`, whose definition starts on 0-based line `start_line`.
pub fn function_rule_facts(f: &Function, start_line: u32) -> RuleFacts {
    let mut out = RuleFacts::default();
    if let Some(body) = f.body {
        let mut stack: Vec<u32> = Vec::new();
        let mut work: Vec<(StmtId, Vec<u32>)> = vec![(body, Vec::new())];
        // Iterative walk; each entry carries its enclosing loops.
        while let Some((id, encl)) = work.pop() {
            stack.clear();
            let st = f.stmt(id);
            let kind = match &st.kind {
                StmtKind::For { .. } => Some("for"),
                StmtKind::While { .. } => Some("while"),
                StmtKind::DoWhile { .. } => Some("do"),
                _ => None,
            };
            for &l in &encl {
                out.loop_stmts.push((l, id.0));
            }
            let mut inner = encl.clone();
            if let Some(kind) = kind {
                out.loops.push(LoopRow {
                    stmt_id: id.0,
                    kind,
                    line: start_line + st.span.line + 1,
                    col: st.span.col,
                    end_line: start_line + st.span.end_line + 1,
                    depth: encl.len() as u32 + 1,
                    parent: encl.last().copied(),
                });
                out.loop_stmts.push((id.0, id.0));
                inner.push(id.0);
            }
            match &st.kind {
                StmtKind::For { init, body, .. } => {
                    if let Some(i) = init {
                        work.push((*i, encl.clone()));
                    }
                    work.push((*body, inner));
                }
                _ => {
                    for c in f.child_stmts(id) {
                        work.push((c, inner.clone()));
                    }
                }
            }
        }
        out.loops.sort_by_key(|l| l.stmt_id);
        out.loop_stmts.sort_unstable();
        out.loop_stmts.dedup();
    }
    if f.kind != FunctionKind::Host {
        out.fp64 = fp64_ops(f, start_line);
    }
    out.launch_args = launch_args(f, start_line, &out);
    if f.kind != FunctionKind::Host {
        out.grid_stride_loops = out
            .loops
            .iter()
            .filter(|l| grid_stride(f, StmtId(l.stmt_id)))
            .map(|l| l.stmt_id)
            .collect();
    }
    out
}

/// Whether loop `s` is a grid-stride loop: a `for` whose step adds to its
/// counter (`i += e`, `i = i + e`) an `e` that mentions `gridDim` or the
/// size of the grid group (`grid.size()`, `this_grid().num_threads()`).
fn grid_stride(f: &Function, s: StmtId) -> bool {
    let StmtKind::For {
        step: Some(step), ..
    } = &f.stmt(s).kind
    else {
        return false;
    };
    let added = match &f.expr(*step).kind {
        ExprKind::Assign {
            op: Some(BinOp::Add),
            rhs,
            ..
        } => Some(*rhs),
        ExprKind::Assign {
            op: None, lhs, rhs, ..
        } => match &f.expr(*rhs).kind {
            ExprKind::Binary(BinOp::Add, a, b) => {
                let same = |x: ExprId| f.expr_text(x) == f.expr_text(*lhs);
                if same(*a) {
                    Some(*b)
                } else if same(*b) {
                    Some(*a)
                } else {
                    None
                }
            }
            _ => None,
        },
        _ => None,
    };
    let Some(e) = added else {
        return false;
    };
    // Through locals (`int stride = blockDim.x * gridDim.x;`), a few levels.
    let mut work = vec![(e, 0u32)];
    while let Some((x, depth)) = work.pop() {
        match &f.expr(x).kind {
            ExprKind::Builtin(crate::ir::Builtin::GridDim(_)) => return true,
            ExprKind::Var(v) if depth < 4 => work.extend(
                crate::facts::coop::var_definitions(f, *v)
                    .into_iter()
                    .map(|d| (d, depth + 1)),
            ),
            _ if matches!(
                crate::facts::coop::group_method(f, x),
                Some((crate::facts::coop::Group::Grid, "size" | "num_threads"))
            ) =>
            {
                return true;
            }
            _ => work.extend(f.child_exprs(x).into_iter().map(|c| (c, depth))),
        }
    }
    false
}

/// The arguments of every launch of `f` (not `cudaLaunchKernel`-style
/// ones, whose arguments are a `void*` array), with the innermost loop
/// around the launch from `facts`' loops.
fn launch_args(f: &Function, start_line: u32, facts: &RuleFacts) -> Vec<LaunchArgRow> {
    let mut out = Vec::new();
    if f.launches.is_empty() {
        return out;
    }
    let parents = stmt_parents(f);
    for l in &f.launches {
        if l.via_api {
            continue;
        }
        // The innermost loop whose iterations run the launch.
        let inner = facts
            .loop_stmts
            .iter()
            .filter(|(_, s)| *s == l.stmt.0)
            .filter_map(|(lp, _)| facts.loops.iter().find(|r| r.stmt_id == *lp))
            .max_by_key(|r| r.depth);
        let assigned: std::collections::HashSet<u32> = match inner {
            Some(lp) => facts
                .loop_stmts
                .iter()
                .filter(|(x, _)| *x == lp.stmt_id)
                .flat_map(|(_, s)| stmt_defs(f, StmtId(*s), lp.stmt_id == *s))
                .collect(),
            None => Default::default(),
        };
        for (position, &a) in l.args.iter().enumerate() {
            let mut reads = Vec::new();
            vars_read(f, a, &mut reads);
            let varies = reads.iter().any(|v| assigned.contains(v));
            let first_value = match (&f.expr(strip(f, a)).kind, inner) {
                (ExprKind::Int(k), _) => Some(*k),
                (ExprKind::Var(v), Some(lp)) => first_value(f, &parents, StmtId(lp.stmt_id), v.0),
                _ => None,
            };
            out.push(LaunchArgRow {
                line: start_line + l.span.line + 1,
                kernel: l.kernel.clone(),
                position: position as u32,
                text: short(f.expr_text(a)),
                loop_line: inner.map(|r| r.line),
                varies,
                first_value,
            });
        }
    }
    out
}

/// `e` without casts and parentheses-like wrappers (`(int) x`, `+x`).
fn strip(f: &Function, mut e: ExprId) -> ExprId {
    while let ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) = &f.expr(e).kind {
        e = *a;
    }
    e
}

/// Every statement's parent statement.
fn stmt_parents(f: &Function) -> std::collections::HashMap<u32, StmtId> {
    let mut out = std::collections::HashMap::new();
    let mut work: Vec<StmtId> = f.body.into_iter().collect();
    while let Some(s) = work.pop() {
        for c in f.child_stmts(s) {
            out.insert(c.0, s);
            work.push(c);
        }
    }
    out
}

/// The expressions statement `s` itself evaluates (not its child statements').
fn stmt_exprs(f: &Function, s: StmtId) -> Vec<ExprId> {
    match &f.stmt(s).kind {
        StmtKind::Decl { init, .. } => init.iter().copied().collect(),
        StmtKind::Expr(e) => vec![*e],
        StmtKind::If { cond, .. }
        | StmtKind::While { cond, .. }
        | StmtKind::DoWhile { cond, .. }
        | StmtKind::Switch { cond, .. } => vec![*cond],
        StmtKind::For { cond, step, .. } => cond.iter().chain(step.iter()).copied().collect(),
        StmtKind::Return(e) => e.iter().copied().collect(),
        _ => Vec::new(),
    }
}

/// Variables statement `s` itself may set: assignment and `++`/`--`
/// targets, variables whose address is taken (a call may set them) and,
/// unless `skip_decl`, a declaration with a non-constant initialiser (a
/// declaration inside a loop with a constant one is the same every
/// iteration).
fn stmt_defs(f: &Function, s: StmtId, skip_decl: bool) -> Vec<u32> {
    let mut out = Vec::new();
    if let StmtKind::Decl { var, init } = &f.stmt(s).kind
        && !skip_decl
        && !init.is_some_and(|i| matches!(f.expr(strip(f, i)).kind, ExprKind::Int(_)))
    {
        out.push(var.0);
    }
    let mut work = stmt_exprs(f, s);
    while let Some(e) = work.pop() {
        let target = match &f.expr(e).kind {
            ExprKind::Assign { lhs, .. } => Some(*lhs),
            ExprKind::IncDec { target, .. } => Some(*target),
            ExprKind::Unary(UnOp::AddrOf, t) => Some(*t),
            _ => None,
        };
        if let Some(t) = target
            && let ExprKind::Var(v) = &f.expr(strip(f, t)).kind
        {
            out.push(v.0);
        }
        work.extend(f.child_exprs(e));
    }
    out
}

/// Every variable expression `e` reads.
fn vars_read(f: &Function, e: ExprId, out: &mut Vec<u32>) {
    let mut work = vec![e];
    while let Some(e) = work.pop() {
        if let ExprKind::Var(v) = &f.expr(e).kind {
            out.push(v.0);
        }
        work.extend(f.child_exprs(e));
    }
}

/// The value of variable `v` when loop `lp` starts: the loop's own `for`
/// initialiser, else the last statement before the loop (in its block and
/// the enclosing ones) that sets `v`, when it is `v = k` or a declaration
/// `T v = k` with an integer constant `k`. `None` when that statement sets
/// `v` otherwise (or inside a nested statement), or nothing before the
/// loop does.
fn first_value(
    f: &Function,
    parents: &std::collections::HashMap<u32, StmtId>,
    lp: StmtId,
    v: u32,
) -> Option<i64> {
    let constant_def = |s: StmtId| -> Option<Option<i64>> {
        // Some(Some(k)): sets v = k; Some(None): sets v otherwise; None: does not set v.
        let mut all = Vec::new();
        let mut work = vec![s];
        while let Some(x) = work.pop() {
            all.extend(stmt_defs(f, x, false));
            if let StmtKind::Decl { var, .. } = &f.stmt(x).kind {
                all.push(var.0);
            }
            work.extend(f.child_stmts(x));
        }
        if !all.contains(&v) {
            return None;
        }
        let value = match &f.stmt(s).kind {
            StmtKind::Decl { var, init: Some(i) } if var.0 == v => Some(*i),
            StmtKind::Expr(e) => match &f.expr(*e).kind {
                ExprKind::Assign { op: None, lhs, rhs } if matches!(f.expr(strip(f, *lhs)).kind, ExprKind::Var(x) if x.0 == v) => {
                    Some(*rhs)
                }
                _ => None,
            },
            _ => None,
        };
        Some(value.and_then(|e| match f.expr(strip(f, e)).kind {
            ExprKind::Int(k) => Some(k),
            _ => None,
        }))
    };
    if let StmtKind::For { init: Some(i), .. } = &f.stmt(lp).kind
        && let Some(k) = constant_def(*i)
    {
        return k;
    }
    let mut child = lp;
    while let Some(&parent) = parents.get(&child.0) {
        if let StmtKind::Block(list) = &f.stmt(parent).kind {
            let at = list.iter().position(|s| *s == child)?;
            for s in list[..at].iter().rev() {
                if let Some(k) = constant_def(*s) {
                    return k;
                }
            }
        } else if !matches!(
            f.stmt(parent).kind,
            StmtKind::If { .. } | StmtKind::PreprocAlt { .. }
        ) {
            // Inside another loop or a switch: earlier iterations may have set it.
            return None;
        }
        child = parent;
    }
    None
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FTy {
    Double,
    Float,
    Int,
    /// (audit 20261208 #34, bindlessTexture `color /= 4.0` on a `float4`)
    /// A CUDA vector type of single precision or integers: its operators
    /// are overloads taking `float`, so a double literal beside it is
    /// converted at compile time, and no double operation runs.
    Vector,
    Other,
}

fn scalar(t: &Type) -> FTy {
    match t {
        Type::Scalar(ScalarType::Double) => FTy::Double,
        Type::Scalar(ScalarType::Float | ScalarType::Half) => FTy::Float,
        Type::Scalar(_) => FTy::Int,
        Type::Named(n) | Type::Record { name: n, .. } if single_vector(n) => FTy::Vector,
        _ => FTy::Other,
    }
}

/// Whether `name` is a CUDA vector type of floats, halves or integers
/// (`float4`, `uchar4`, `half2`, …; not `double2`).
fn single_vector(name: &str) -> bool {
    let n = name.trim().trim_start_matches("const ").trim();
    let n = n.strip_prefix("__").unwrap_or(n);
    let Some(base) = n.strip_suffix(['1', '2', '3', '4']) else {
        return false;
    };
    matches!(
        base,
        "float"
            | "half"
            | "nv_bfloat16"
            | "char"
            | "uchar"
            | "short"
            | "ushort"
            | "int"
            | "uint"
            | "long"
            | "ulong"
            | "longlong"
            | "ulonglong"
    )
}

fn element(t: &Type) -> Option<&Type> {
    match t {
        Type::Pointer(e) | Type::Array(e, _) => Some(e),
        _ => None,
    }
}

/// Math functions that have float and double overloads (C++/CUDA).
const MATH: &[&str] = &[
    "sqrt",
    "rsqrt",
    "cbrt",
    "rcbrt",
    "exp",
    "exp2",
    "exp10",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "pow",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "fabs",
    "floor",
    "ceil",
    "round",
    "rint",
    "trunc",
    "fmod",
    "remainder",
    "fmin",
    "fmax",
    "fma",
    "fdim",
    "hypot",
    "rhypot",
    "erf",
    "erfc",
    "erfinv",
    "lgamma",
    "tgamma",
    "sinpi",
    "cospi",
    "norm3d",
    "norm4d",
    "ldexp",
    "scalbn",
    "copysign",
];

/// Double-precision intrinsics.
const DOUBLE_INTRINSICS: &[&str] = &[
    "__dadd_rn",
    "__dadd_rz",
    "__dadd_ru",
    "__dadd_rd",
    "__dsub_rn",
    "__dsub_rz",
    "__dsub_ru",
    "__dsub_rd",
    "__dmul_rn",
    "__dmul_rz",
    "__dmul_ru",
    "__dmul_rd",
    "__ddiv_rn",
    "__ddiv_rz",
    "__ddiv_ru",
    "__ddiv_rd",
    "__dsqrt_rn",
    "__dsqrt_rz",
    "__dsqrt_ru",
    "__dsqrt_rd",
    "__drcp_rn",
    "__drcp_rz",
    "__drcp_ru",
    "__drcp_rd",
    "__fma_rn",
    "__fma_rz",
    "__fma_ru",
    "__fma_rd",
];

fn fp64_ops(f: &Function, start_line: u32) -> Vec<Fp64Row> {
    let n = f.exprs.len();
    // Per expression: its type and, for doubles, the operand that made it so.
    let mut ty: Vec<(FTy, Option<(&'static str, ExprId)>)> = vec![(FTy::Other, None); n];
    // Declared type of expressions that name storage (for element types).
    let mut decl: Vec<Option<Type>> = vec![None; n];
    let mut out = Vec::new();
    let get = |ty: &[(FTy, Option<(&'static str, ExprId)>)], c: ExprId, me: usize| {
        if (c.0 as usize) < me {
            ty[c.0 as usize]
        } else {
            (FTy::Other, None)
        }
    };
    // (audits 20261210 #8, 20261212 #7: myocyte's `const fp c = 41.0 /
    // 840.0;`) Expressions of literals only: the compiler folds them, so
    // their operations never run (a double result still makes the
    // operations it feeds double).
    let mut literal = vec![false; n];
    let lit = |literal: &[bool], c: ExprId, me: usize| (c.0 as usize) < me && literal[c.0 as usize];
    for i in 0..n {
        let id = ExprId(i as u32);
        literal[i] = match &f.expr(id).kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::SizeOf(_) => true,
            ExprKind::Unary(UnOp::Neg | UnOp::Plus, a) | ExprKind::Cast(_, a) => {
                lit(&literal, *a, i)
            }
            ExprKind::Binary(_, a, b) => lit(&literal, *a, i) && lit(&literal, *b, i),
            _ => false,
        };
    }
    for i in 0..n {
        let id = ExprId(i as u32);
        let e = f.expr(id);
        let leaf = |cause: &'static str, t: FTy| (t, (t == FTy::Double).then_some((cause, id)));
        let (t, d) = match &e.kind {
            ExprKind::Int(_) | ExprKind::Bool(_) | ExprKind::SizeOf(_) => (FTy::Int, None),
            ExprKind::Float(text) => {
                let t = text.trim();
                if t.ends_with('f') || t.ends_with('F') {
                    (FTy::Float, None)
                } else {
                    leaf("literal", FTy::Double)
                }
            }
            ExprKind::Var(v) => {
                let vt = &f.var(*v).ty;
                decl[i] = Some(vt.clone());
                leaf("variable", scalar(vt))
            }
            ExprKind::Cast(t, _) => {
                decl[i] = Some(t.clone());
                leaf("cast", scalar(t))
            }
            ExprKind::Index { base, .. } | ExprKind::Unary(UnOp::Deref, base) => {
                let et = if (base.0 as usize) < i {
                    decl[base.0 as usize].as_ref().and_then(element).cloned()
                } else {
                    None
                };
                let s = et.as_ref().map(scalar).unwrap_or(FTy::Other);
                decl[i] = et;
                leaf("element", s)
            }
            ExprKind::Unary(UnOp::Neg | UnOp::Plus, a) => get(&ty, *a, i),
            ExprKind::Unary(..) => (FTy::Int, None),
            ExprKind::Binary(op, a, b) => {
                let (ta, tb) = (get(&ty, *a, i), get(&ty, *b, i));
                match op {
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => {
                        let r = join(ta, tb);
                        if r.0 == FTy::Double && !literal[i] {
                            push(&mut out, f, start_line, id, op_text(*op), r.1);
                        }
                        r
                    }
                    BinOp::Comma => tb,
                    _ => (FTy::Int, None),
                }
            }
            ExprKind::Assign { op, lhs, rhs } => {
                let tl = get(&ty, *lhs, i);
                if let Some(op) = op
                    && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div)
                {
                    let r = join(tl, get(&ty, *rhs, i));
                    if r.0 == FTy::Double {
                        push(
                            &mut out,
                            f,
                            start_line,
                            id,
                            &format!("{}=", op_text(*op)),
                            r.1,
                        );
                    }
                }
                tl
            }
            ExprKind::IncDec { target, .. } => get(&ty, *target, i),
            ExprKind::Cond(_, a, b) => join(get(&ty, *a, i), get(&ty, *b, i)),
            ExprKind::Call { callee, args, .. } => {
                let name = callee.strip_prefix("std::").unwrap_or(callee);
                if DOUBLE_INTRINSICS.contains(&name) {
                    push(&mut out, f, start_line, id, name, Some(("call", id)));
                    leaf("call", FTy::Double)
                } else if MATH.contains(&name) {
                    let r = args
                        .iter()
                        .map(|a| get(&ty, *a, i))
                        .fold((FTy::Int, None), join);
                    if r.0 == FTy::Double {
                        push(&mut out, f, start_line, id, name, r.1);
                        (FTy::Double, r.1)
                    } else {
                        (FTy::Other, None)
                    }
                } else {
                    (FTy::Other, None)
                }
            }
            _ => (FTy::Other, None),
        };
        ty[i] = (t, d);
    }
    out.sort_by(|a, b| (a.line, a.col, &a.op).cmp(&(b.line, b.col, &b.op)));
    out
}

/// C++'s usual arithmetic conversions on what is known.
fn join(
    a: (FTy, Option<(&'static str, ExprId)>),
    b: (FTy, Option<(&'static str, ExprId)>),
) -> (FTy, Option<(&'static str, ExprId)>) {
    match (a.0, b.0) {
        (FTy::Vector, _) | (_, FTy::Vector) => (FTy::Vector, None),
        (FTy::Double, _) => a,
        (_, FTy::Double) => b,
        (FTy::Float, _) | (_, FTy::Float) => (FTy::Float, None),
        (FTy::Int, FTy::Int) => (FTy::Int, None),
        _ => (FTy::Other, None),
    }
}

fn op_text(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        _ => "?",
    }
}

fn short(s: String) -> String {
    if s.chars().count() > 80 {
        s.chars().take(77).collect::<String>() + "..."
    } else {
        s
    }
}

fn push(
    out: &mut Vec<Fp64Row>,
    f: &Function,
    start_line: u32,
    id: ExprId,
    op: &str,
    cause: Option<(&'static str, ExprId)>,
) {
    let span = f.expr(id).span;
    let (cause, src) = cause.unwrap_or(("call", id));
    out.push(Fp64Row {
        line: start_line + span.line + 1,
        col: span.col,
        op: op.to_string(),
        expr_text: short(f.expr_text(id)),
        cause,
        source: short(f.expr_text(src)),
    });
}

/// The arguments of `__launch_bounds__(…)` in a definition's text (before
/// its body), as written.
pub fn launch_bounds_decl(text: &str) -> Option<String> {
    let head = &text[..text.find('{').unwrap_or(text.len())];
    let at = head.find("__launch_bounds__")?;
    let rest = head[at + "__launch_bounds__".len()..].trim_start();
    let inner = rest.strip_prefix('(')?;
    let mut depth = 1;
    for (i, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(inner[..i].split_whitespace().collect::<Vec<_>>().join(" "));
                }
            }
            _ => {}
        }
    }
    None
}

/// Insert `facts` of the function `fid` whose definition starts on
/// 0-based line `start_line` (lines in `facts` are relative: 1 = its first
/// line). Called by the store's `insert_function` with the function's
/// other IR-derived rows.
pub fn insert_rule_facts(
    tx: &Connection,
    fid: i64,
    start_line: u32,
    facts: &RuleFacts,
) -> rusqlite::Result<()> {
    let mut ins_loop = tx.prepare_cached(
        "INSERT INTO loops(function_id, stmt_id, kind, line, col, end_line, depth, parent_stmt) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for l in &facts.loops {
        ins_loop.execute(params![
            fid,
            l.stmt_id,
            l.kind,
            start_line + l.line,
            l.col,
            start_line + l.end_line,
            l.depth,
            l.parent
        ])?;
    }
    let mut ins_member = tx.prepare_cached(
        "INSERT INTO loop_stmts(function_id, loop_stmt, stmt_id) VALUES (?1, ?2, ?3)",
    )?;
    for (l, s) in &facts.loop_stmts {
        ins_member.execute(params![fid, l, s])?;
    }
    let mut ins_fp = tx.prepare_cached(
        "INSERT INTO fp64_ops(function_id, line, col, op, expr_text, cause, source) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for o in &facts.fp64 {
        ins_fp.execute(params![
            fid,
            start_line + o.line,
            o.col,
            o.op,
            o.expr_text,
            o.cause,
            o.source
        ])?;
    }
    if let Some(args) = &facts.launch_bounds_args {
        tx.prepare_cached("INSERT INTO launch_bounds_decls(function_id, args) VALUES (?1, ?2)")?
            .execute(params![fid, args])?;
    }
    let mut ins_arg = tx.prepare_cached(
        "INSERT INTO launch_args(function_id, line, kernel_name, position, text, loop_line, \
         varies, first_value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut ins_grid =
        tx.prepare_cached("INSERT INTO grid_stride_loops(function_id, stmt_id) VALUES (?1, ?2)")?;
    for s in &facts.grid_stride_loops {
        ins_grid.execute(params![fid, s])?;
    }
    for a in &facts.launch_args {
        ins_arg.execute(params![
            fid,
            start_line + a.line,
            a.kernel,
            a.position,
            a.text,
            a.loop_line.map(|l| start_line + l),
            a.varies,
            a.first_value
        ])?;
    }
    Ok(())
}

/// Move the rule-fact rows of function `fid` by `delta` lines (the
/// function moved, nothing else changed). Called by the store's
/// `shift_function`.
pub fn shift_rule_facts(tx: &Connection, fid: i64, delta: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "UPDATE loops SET line = line + ?1, end_line = end_line + ?1 WHERE function_id = ?2",
    )?
    .execute(params![delta, fid])?;
    tx.prepare_cached("UPDATE fp64_ops SET line = line + ?1 WHERE function_id = ?2")?
        .execute(params![delta, fid])?;
    tx.prepare_cached(
        "UPDATE launch_args SET line = line + ?1, loop_line = loop_line + ?1 WHERE function_id = ?2",
    )?
    .execute(params![delta, fid])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontend::preproc::MacroTable;
    use crate::frontend::scan::{Scope, scan_file};
    use std::sync::Arc;

    /// The first function of `src`, lowered.
    fn lower_function_text(src: &str) -> Function {
        let tree = crate::frontend::syntax::parse(src);
        let init = Arc::new(Scope {
            macros: MacroTable::predefined(),
            ..Scope::default()
        });
        let scan = scan_file(src, &tree, init, &mut |_, _| None);
        let site = &scan.functions[0];
        crate::frontend::lower::lower_function(
            &site.text,
            site.start_col,
            &site.name,
            &site.scope_path,
            site.kind,
            &site.scope,
        )
    }

    /// Rule facts of the first function of `src`, as if it started on line 10.
    fn facts(src: &str) -> RuleFacts {
        let f = lower_function_text(src);
        function_rule_facts(&f, 9)
    }

    #[test]
    fn loops_nest_and_list_their_iterated_statements() {
        let r = facts(
            "__global__ void k(float* a, int n) {\n\
               for (int i = a[0]; i < n; i++) {\n\
                 while (a[i] > 0) { a[i] -= 1; }\n\
               }\n\
               a[1] = 0;\n\
             }\n",
        );
        assert_eq!(r.loops.len(), 2);
        let (outer, inner) = (&r.loops[0], &r.loops[1]);
        assert_eq!(
            (outer.kind, outer.line, outer.end_line, outer.depth),
            ("for", 11, 13, 1)
        );
        assert_eq!(
            (inner.kind, inner.line, inner.depth, inner.parent),
            ("while", 12, 2, Some(outer.stmt_id))
        );
        let f = lower_function_text(
            "__global__ void k(float* a, int n) {\n\
               for (int i = a[0]; i < n; i++) {\n\
                 while (a[i] > 0) { a[i] -= 1; }\n\
               }\n\
               a[1] = 0;\n\
             }\n",
        );
        let in_loop = |acc: &crate::ir::Access, l: u32| r.loop_stmts.contains(&(l, acc.stmt.0));
        // a[0] in the initialiser runs once; a[i] in the while condition and
        // body run on every iteration of both loops; a[1] after the loop none.
        let by_text: Vec<(String, bool, bool)> = f
            .accesses
            .iter()
            .map(|a| {
                (
                    a.index_text.clone(),
                    in_loop(a, outer.stmt_id),
                    in_loop(a, inner.stmt_id),
                )
            })
            .collect();
        assert!(
            by_text.contains(&("[0]".into(), false, false)),
            "{by_text:?}"
        );
        assert!(by_text.contains(&("[i]".into(), true, true)), "{by_text:?}");
        assert!(
            by_text.contains(&("[1]".into(), false, false)),
            "{by_text:?}"
        );
    }

    #[test]
    fn double_arithmetic_is_found_with_its_cause() {
        let r = facts(
            "__global__ void k(float* a, double* d, int n) {\n\
               float x = a[0] * 2.0f;\n\
               float y = a[0] * 2.0;\n\
               double z = d[0] + 1;\n\
               x += (double)n;\n\
               float s = sqrt(x) + sqrtf(y);\n\
               float t = sqrt(z);\n\
               int m = n * 2 + n / 3;\n\
             }\n",
        );
        let got: Vec<(u32, &str, &str, &str)> = r
            .fp64
            .iter()
            .map(|o| (o.line, o.op.as_str(), o.cause, o.source.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (12, "*", "literal", "2.0"),
                (13, "+", "element", "d[0]"),
                (14, "+=", "cast", "(double)n"),
                (16, "sqrt", "variable", "z"),
            ]
        );
    }

    #[test]
    fn launch_bounds_are_read_from_the_signature_only() {
        assert_eq!(
            launch_bounds_decl(
                "template <int B>\n__global__ void __launch_bounds__(B, (2)) k() { __launch_bounds__(9); }"
            ),
            Some("B, (2)".into())
        );
        assert_eq!(
            launch_bounds_decl("__global__ void k() { /* __launch_bounds__(9) */ }"),
            None
        );
    }

    #[test]
    fn host_functions_have_loops_but_no_fp64_rows() {
        let r = facts(
            "void h(double* d, int n) {\n for (int i = 0; i < n; i++) d[i] = d[i] * 2.0;\n k<<<1, 1>>>(d);\n}\n",
        );
        assert!(r.fp64.is_empty());
        assert_eq!(r.loops.len(), 1);
    }

    /// Schema 008 (session 6): launch arguments with how the innermost
    /// loop around the launch changes them, and their first value.
    #[test]
    fn launch_arguments_know_what_the_loop_changes_and_the_first_value() {
        let r = facts(
            "void h(float* d, int n, int w) {\n\
               int mul = 7;\n\
               for (int it = 0; it < n; it++) {\n\
                 mul = 1;\n\
                 int blocks = n;\n\
                 while (blocks > 0) {\n\
                   k<<<blocks, 256>>>(d, mul, w, 3);\n\
                   mul = mul * 256;\n\
                   blocks = blocks / 256;\n\
                 }\n\
               }\n\
               for (int s = 4; s < n; s *= 2) { k<<<1, 256>>>(d, s, w, 3); }\n\
               k<<<1, 1>>>(d, mul, w, 3);\n\
             }\n",
        );
        let row = |line: u32, pos: u32| {
            r.launch_args
                .iter()
                .find(|a| a.line == line && a.position == pos)
                .unwrap_or_else(|| panic!("{line}:{pos} in {:?}", r.launch_args))
        };
        // Lines as if the function started on line 10.
        let mul = row(16, 1);
        assert_eq!(
            (mul.text.as_str(), mul.varies, mul.first_value),
            ("mul", true, Some(1))
        );
        assert_eq!(mul.loop_line, Some(15));
        let w = row(16, 2);
        assert!(!w.varies && w.first_value.is_none(), "{w:?}");
        assert_eq!(row(16, 3).first_value, Some(3));
        let s = row(21, 1);
        assert_eq!((s.varies, s.first_value), (true, Some(4)));
        let outside = row(22, 1);
        assert_eq!((outside.loop_line, outside.varies), (None, false));
        assert!(r.grid_stride_loops.is_empty());
    }

    #[test]
    fn grid_stride_loops_are_recognised_directly_and_through_a_local() {
        let r = facts(
            "__global__ void k(float* a, int n) {\n\
               int stride = blockDim.x * gridDim.x;\n\
               for (int i = threadIdx.x; i < n; i += stride) a[i] = 0;\n\
               for (int j = threadIdx.x; j < n; j += blockDim.x) a[j] = 1;\n\
               for (int q = threadIdx.x; q < n; q = q + gridDim.x * blockDim.x) a[q] = 2;\n\
             }\n",
        );
        assert_eq!(r.loops.len(), 3);
        let lines: Vec<u32> = r
            .grid_stride_loops
            .iter()
            .map(|s| r.loops.iter().find(|l| l.stmt_id == *s).unwrap().line)
            .collect();
        assert_eq!(lines, vec![12, 14], "{r:?}");
    }
}
