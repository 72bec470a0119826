//! Constant launch dimensions from a launch site's block expression, and the
//! helpers that map a launch's template arguments to the kernel's non-type
//! template parameters.

use super::barriers::{MAX_TEMPLATE_VALUES, const_value, single_def};
use crate::ir::{ExprId, ExprKind, Function, StmtKind, Type, VarId};

/// The block dimensions an expression denotes: an integer (`256`), a
/// `dim3(x, y, z)` construction, or a variable initialised with one.
///
/// (issue 8, class 1) A `dim3` variable declared without arguments is
/// (1, 1, 1) and takes the constants assigned to its members (`b.x = 32;`;
/// a member assigned twice, or not a constant, is unknown). Where an
/// integer's value is unknown the launch is still one-dimensional: y = z = 1.
pub fn block_dims(f: &Function, e: ExprId) -> [Option<u32>; 3] {
    block_dims_in(f, e, &[])
}

/// [`block_dims`], resolving a parameter of the launching host function
/// through its callers among `file` (the host functions of the launching
/// file): when every call passes the same constant (a local initialised to
/// a constant, a macro, a `dim3` member), the parameter has that value
/// (issue 8 audit #13, session 7: `run(…, n)` called only as `run(…, nt)`
/// with `unsigned nt = 256;`). A call that leaves the parameter to its
/// default argument, or callers that disagree, leave it unknown. Callers in
/// other files are not seen.
pub fn block_dims_in(f: &Function, e: ExprId, file: &[&Function]) -> [Option<u32>; 3] {
    block_dims_at(f, e, file, 0)
}

/// [`block_dims_in`] at recursion depth `depth` (shared with
/// [`host_const`] and [`dim3_var_at`], which call each other).
fn block_dims_at(f: &Function, e: ExprId, file: &[&Function], depth: u32) -> [Option<u32>; 3] {
    if depth > 8 {
        return [None; 3];
    }
    let as_u32 = |e: ExprId| host_const(f, e, depth, file).and_then(|v| u32::try_from(v).ok());
    let one_d = |known: Option<u32>| [known, Some(1), Some(1)];
    match &f.expr(e).kind {
        // (audit 20261210 #32, fluidsGL `uint3 tids = make_uint3(TIDSX,
        // TIDSY, 1)`) A `uint3` made by `make_uint3` launches like a `dim3`.
        ExprKind::Call { callee, args, .. }
            if callee == "dim3" || callee == "dim3{}" || callee == "make_uint3" =>
        {
            let mut out = [Some(1), Some(1), Some(1)];
            for (i, a) in args.iter().take(3).enumerate() {
                out[i] = as_u32(*a);
            }
            out
        }
        ExprKind::Var(v) if is_dim3(&f.var(*v).ty) => {
            dim3_var_at(f, *v, file, depth + 1, f.expr(e).span)
        }
        ExprKind::Var(v) => {
            let mut dims = match single_def(f, v.0) {
                Some(init) => block_dims_at(f, init, file, depth + 1),
                None => [None; 3],
            };
            if dims == [None; 3] && is_int(&f.var(*v).ty) {
                dims[0] = as_u32(e);
            }
            if is_int(&f.var(*v).ty) && dims[1..] == [None, None] {
                one_d(dims[0])
            } else {
                dims
            }
        }
        ExprKind::Cast(_, a) => block_dims_at(f, *a, file, depth + 1),
        ExprKind::Int(_) | ExprKind::Binary(..) | ExprKind::Unary(..) => one_d(as_u32(e)),
        _ => match as_u32(e) {
            Some(v) => one_d(Some(v)),
            None => [None; 3],
        },
    }
}

/// (issue 8, session 6) [`const_value`], and a variable (a parameter too)
/// whose only write is one top-level statement `v = C;` of the function
/// body with no statement before it mentioning `v`: every read sees `C`
/// (`sqrt_block_size = 16; dim3 block(sqrt_block_size, sqrt_block_size);`).
fn host_const(f: &Function, e: ExprId, depth: u32, file: &[&Function]) -> Option<i64> {
    if let Some(v) = const_value(f, e) {
        return Some(v);
    }
    if depth > 8 {
        return None;
    }
    let rec = |x: ExprId| host_const(f, x, depth + 1, file);
    match &f.expr(e).kind {
        ExprKind::Cast(_, a) => rec(*a),
        // (issue 8, session 12, simpleGL `dim3 grid(mesh_width / block.x,
        // …)`) A member of a `dim3` local.
        ExprKind::Member {
            base,
            field,
            arrow: false,
        } => {
            let ExprKind::Var(v) = f.expr(*base).kind else {
                return None;
            };
            if !is_dim3(&f.var(v).ty) {
                return None;
            }
            let d = ["x", "y", "z"].iter().position(|m| m == field)?;
            dim3_var_at(f, v, file, depth + 1, f.expr(e).span)[d].map(i64::from)
        }
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (rec(*a)?, rec(*b)?);
            match op {
                crate::ir::BinOp::Add => x.checked_add(y),
                crate::ir::BinOp::Sub => x.checked_sub(y),
                crate::ir::BinOp::Mul => x.checked_mul(y),
                crate::ir::BinOp::Div => x.checked_div(y),
                crate::ir::BinOp::Shl => x.checked_shl(u32::try_from(y).ok()?),
                crate::ir::BinOp::Shr => x.checked_shr(u32::try_from(y).ok()?),
                _ => None,
            }
        }
        ExprKind::Var(v) => {
            let v = *v;
            let is_v = |x: ExprId| matches!(f.expr(x).kind, ExprKind::Var(w) if w == v);
            let writes: Vec<ExprId> = f
                .exprs
                .iter()
                .enumerate()
                .filter_map(|(i, x)| match &x.kind {
                    ExprKind::Assign { lhs, .. } | ExprKind::IncDec { target: lhs, .. }
                        if is_v(*lhs) =>
                    {
                        Some(ExprId(i as u32))
                    }
                    ExprKind::Unary(crate::ir::UnOp::AddrOf, a) if is_v(*a) => {
                        Some(ExprId(i as u32))
                    }
                    _ => None,
                })
                .collect();
            if writes.is_empty() && f.var(v).param_position.is_some() {
                return from_callers(f, v, file, depth);
            }
            let [w] = writes.as_slice() else {
                return None;
            };
            let ExprKind::Assign { op: None, rhs, .. } = &f.expr(*w).kind else {
                return None;
            };
            let StmtKind::Block(top) = &f.stmt(f.body?).kind else {
                return None;
            };
            let at = top
                .iter()
                .position(|s| matches!(f.stmt(*s).kind, StmtKind::Expr(x) if x == *w))?;
            let mentions = |s: crate::ir::StmtId| {
                let mut stack: Vec<crate::ir::StmtId> = vec![s];
                while let Some(t) = stack.pop() {
                    let mut exprs: Vec<ExprId> = match &f.stmt(t).kind {
                        // (audit 20261206 #22, gaussian `int blockSize2d;
                        // blockSize2d = BLOCK_SIZE_XY;`) A declaration
                        // without initialiser reads nothing.
                        StmtKind::Decl { var, init } => {
                            if *var == v {
                                if init.is_some() {
                                    return true;
                                }
                                continue;
                            }
                            init.iter().copied().collect()
                        }
                        StmtKind::Expr(x) => vec![*x],
                        _ => Vec::new(),
                    };
                    while let Some(x) = exprs.pop() {
                        if is_v(x) {
                            return true;
                        }
                        exprs.extend(f.child_exprs(x));
                    }
                    stack.extend(f.child_stmts(t));
                }
                false
            };
            if top[..at].iter().any(|s| mentions(*s)) {
                return None;
            }
            rec(*rhs)
        }
        _ => None,
    }
}

/// The value every caller in `file` passes for parameter `v` of host
/// function `f` (see [`block_dims_in`]).
fn from_callers(f: &Function, v: VarId, file: &[&Function], depth: u32) -> Option<i64> {
    let pos = f.var(v).param_position?;
    if f.kind != crate::ir::FunctionKind::Host {
        return None;
    }
    let arity = f.vars.iter().filter(|w| w.param_position.is_some()).count();
    let mut value = None;
    for g in file {
        for x in &g.exprs {
            let ExprKind::Call {
                callee,
                receiver: None,
                args,
            } = &x.kind
            else {
                continue;
            };
            if callee.rsplit("::").next() != Some(f.name.as_str()) || args.len() > arity {
                continue;
            }
            // A default argument is not seen: unknown.
            let a = *args.get(pos as usize)?;
            let c = host_const(g, a, depth + 1, file)?;
            if value.is_some_and(|w| w != c) {
                return None;
            }
            value = Some(c);
        }
    }
    value
}

/// (issue 8, session 12) For each kernel argument of launch `l` in host
/// function `f`, its integer value when it is a constant there (see
/// [`block_dims_in`] for what resolves: locals set once, macros, `const`s,
/// parameters every caller in `file` passes the same constant for).
pub fn launch_arg_values(
    f: &Function,
    l: &crate::ir::Launch,
    file: &[&Function],
) -> [Option<i64>; super::barriers::MAX_PARAM_DIMS] {
    let mut out = [None; super::barriers::MAX_PARAM_DIMS];
    // `cudaLaunchKernel`-style: one `void**` array, not the arguments.
    if l.via_api {
        return out;
    }
    for (slot, a) in out.iter_mut().zip(&l.args) {
        *slot = host_const(f, *a, 0, file);
    }
    out
}

/// (audit 20261205/20261206 #41) For each kernel argument of launch `l` in
/// host function `f`, the block dimension it repeats: the argument is the
/// same expression as that dimension of the launch's block (`b.x` for a
/// `dim3 b`, the integer block itself, or the corresponding argument of a
/// `dim3(…)` construction), evaluated at the same point, so the kernel's
/// parameter equals `blockDim` in that dimension.
pub fn param_block_dims(
    f: &Function,
    l: &crate::ir::Launch,
) -> [Option<u8>; super::barriers::MAX_PARAM_DIMS] {
    let mut out = [None; super::barriers::MAX_PARAM_DIMS];
    let Some(dims) = block_dim_texts(f, l) else {
        return out;
    };
    let strip = |e: ExprId| f.strip_casts(e);
    for (i, a) in l.args.iter().take(out.len()).enumerate() {
        let a = strip(*a);
        // Only names and members: an expression with a call or a side
        // effect may differ between its two evaluations.
        if !matches!(
            f.expr(a).kind,
            ExprKind::Var(_) | ExprKind::Member { arrow: false, .. }
        ) {
            continue;
        }
        let t = f.expr_text(a);
        out[i] = dims
            .iter()
            .position(|d| d.as_deref() == Some(t.as_str()))
            .map(|d| d as u8);
    }
    out
}

/// (session 16; audit 20261232 #40, imageDenoising) For each dimension of
/// launch `l`'s block whose value `block` does not give, the
/// [`name_hash`](super::barriers::name_hash) of the undefined name (an
/// unexpanded macro) it is written as: `k<<<g, dim3(BX, BY)>>>`, or a
/// `dim3` local declared once as `dim3 t(BX, BY)` whose members are never
/// assigned.
pub fn name_block_dims(
    f: &Function,
    l: &crate::ir::Launch,
    block: &[Option<u32>; 3],
) -> [Option<u64>; 3] {
    let mut out = [None; 3];
    let Some(b) = l.block else {
        return out;
    };
    let b = f.strip_casts(b);
    let dim3_args = |e: ExprId| match &f.expr(e).kind {
        ExprKind::Call { callee, args, .. } if callee == "dim3" || callee == "dim3{}" => {
            Some(args.clone())
        }
        _ => None,
    };
    let args: Vec<ExprId> = match &f.expr(b).kind {
        ExprKind::Var(v) if is_dim3(&f.var(*v).ty) => {
            let decls: Vec<Option<ExprId>> = f
                .stmts
                .iter()
                .filter_map(|s| match &s.kind {
                    StmtKind::Decl { var, init } if var == v => Some(*init),
                    _ => None,
                })
                .collect();
            let is_v = |x: ExprId| {
                let x = match &f.expr(x).kind {
                    ExprKind::Member { base, .. } => *base,
                    _ => x,
                };
                matches!(f.expr(x).kind, ExprKind::Var(w) if w == *v)
            };
            let written = f.exprs.iter().any(|e| match &e.kind {
                ExprKind::Assign { lhs: x, .. }
                | ExprKind::IncDec { target: x, .. }
                | ExprKind::Unary(crate::ir::UnOp::AddrOf, x) => is_v(*x),
                _ => false,
            });
            match decls.as_slice() {
                [Some(init)] if !written => match dim3_args(f.strip_casts(*init)) {
                    Some(a) => a,
                    None => return out,
                },
                _ => return out,
            }
        }
        ExprKind::Name(_) => vec![b],
        _ => match dim3_args(b) {
            Some(a) => a,
            None => return out,
        },
    };
    for (d, a) in args.iter().take(3).enumerate() {
        if block[d].is_none()
            && let ExprKind::Name(n) = &f.expr(f.strip_casts(*a)).kind
        {
            out[d] = Some(super::barriers::name_hash(n));
        }
    }
    out
}

/// The expression text of each dimension of launch `l`'s block (`b.x` for a
/// `dim3 b`, the integer block itself, or the corresponding argument of a
/// `dim3(…)` construction); `None` without a block.
fn block_dim_texts(f: &Function, l: &crate::ir::Launch) -> Option<[Option<String>; 3]> {
    let strip = |e: ExprId| f.strip_casts(e);
    let b = strip(l.block?);
    Some(match &f.expr(b).kind {
        ExprKind::Var(v) if is_dim3(&f.var(*v).ty) => {
            let name = &f.var(*v).name;
            ["x", "y", "z"].map(|m| Some(format!("{name}.{m}")))
        }
        ExprKind::Var(v) if is_int(&f.var(*v).ty) => [Some(f.var(*v).name.clone()), None, None],
        ExprKind::Call { callee, args, .. } if callee == "dim3" || callee == "dim3{}" => {
            std::array::from_fn(|i| args.get(i).map(|a| f.expr_text(strip(*a))))
        }
        _ => [None, None, None],
    })
}

/// (issue 8, session 13; audit 20261216 #53) For each template argument of
/// launch `l` in host function `f`, the block dimension it repeats: a name
/// (or member) that is also, as written, that dimension of the launch's
/// block (`k<block_size><<<g, block_size>>>`), so the kernel's template
/// parameter equals `blockDim` there.
///
/// (session 15) Also a constant template argument equal to exactly one
/// constant dimension of the launch's resolved `block` (`k<256><<<g,
/// 256>>>`; `values` are the arguments' values), or launched under its
/// `case` of a switch on that dimension's name.
pub fn template_block_dims(
    f: &Function,
    l: &crate::ir::Launch,
    block: &[Option<u32>; 3],
    values: &[Option<i64>; super::barriers::MAX_TEMPLATE_VALUES],
) -> [Option<u8>; super::barriers::MAX_TEMPLATE_VALUES] {
    let mut out = [None; super::barriers::MAX_TEMPLATE_VALUES];
    for (slot, v) in out.iter_mut().zip(values) {
        if let Some(k) = v
            && let [d] = (0..3)
                .filter(|d| block[*d].map(i64::from) == Some(*k))
                .collect::<Vec<usize>>()
                .as_slice()
        {
            *slot = Some(*d as u8);
        }
    }
    let Some(dims) = block_dim_texts(f, l) else {
        return out;
    };
    let name = |t: &str| {
        !t.is_empty()
            && !t.starts_with(|c: char| c.is_ascii_digit())
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    for (slot, a) in out.iter_mut().zip(&l.template_args) {
        let a = a.trim();
        if slot.is_some() {
            continue;
        }
        if name(a) {
            *slot = dims
                .iter()
                .position(|d| d.as_deref() == Some(a))
                .map(|d| d as u8);
        } else if let Ok(k) = a.parse::<i64>() {
            // (session 15, audit 20261228 #28: threadFenceReduction's
            // `switch (threads) { case 512: k<512><<<g, dimBlock>>>` with
            // `dim3 dimBlock(threads, 1, 1)`) A constant template argument
            // under the `case` of a switch on the block dimension's name.
            *slot = dims
                .iter()
                .position(|d| {
                    d.as_deref()
                        .map(|t| dim3_member_text(f, t))
                        .is_some_and(|t| name(&t) && in_case_of(f, l.stmt, &t, k))
                })
                .map(|d| d as u8);
        }
    }
    out
}

/// `b.x` for a `dim3 b(n, …)` declared once: the text of `n`; any other
/// text unchanged.
fn dim3_member_text(f: &Function, t: &str) -> String {
    let Some((var, m)) = t.rsplit_once('.') else {
        return t.to_string();
    };
    let i = match m {
        "x" => 0,
        "y" => 1,
        "z" => 2,
        _ => return t.to_string(),
    };
    let decls: Vec<Option<ExprId>> = f
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Decl { var: v, init } if f.var(*v).name == var => Some(*init),
            _ => None,
        })
        .collect();
    if let [Some(init)] = decls.as_slice()
        && let ExprKind::Call { callee, args, .. } = &f.expr(f.strip_casts(*init)).kind
        && (callee == "dim3" || callee == "dim3{}")
        && let Some(a) = args.get(i)
    {
        return f.expr_text(f.strip_casts(*a));
    }
    t.to_string()
}

/// Whether statement `s` runs only under `case k:` of an enclosing `switch
/// (name)`: the nearest label before it in the switch's body is `case k`,
/// and the statement before that label ends the previous case (no
/// fall-through into it).
fn in_case_of(f: &Function, s: crate::ir::StmtId, name: &str, k: i64) -> bool {
    let parents = super::divergence::stmt_parents(f);
    let mut chain = vec![s];
    let mut at = parents.get(s.0 as usize).copied().flatten();
    while let Some(p) = at {
        if let StmtKind::Switch { cond, body } = &f.stmt(p).kind
            && f.expr_text(f.strip_casts(*cond)) == name
        {
            let StmtKind::Block(v) = &f.stmt(*body).kind else {
                return false;
            };
            let Some(i) = v.iter().position(|x| chain.contains(x)) else {
                return false;
            };
            for j in (0..=i).rev() {
                if let StmtKind::Case(label) = &f.stmt(v[j]).kind {
                    let ends_previous = j == 0
                        || matches!(
                            f.stmt(v[j - 1]).kind,
                            StmtKind::Break | StmtKind::Return(_) | StmtKind::Continue
                        );
                    return ends_previous
                        && label.is_some_and(|e| super::barriers::const_value(f, e) == Some(k));
                }
            }
            return false;
        }
        chain.push(p);
        at = parents.get(p.0 as usize).copied().flatten();
    }
    false
}

/// (audit 20261205/20261206 #41) Kernel `f` with every read of a parameter
/// that each launch passes as a block dimension
/// ([`LaunchDims::param_block_dims`](super::barriers::LaunchDims)) replaced
/// by that `blockDim`, and (issue 8, session 12) every read of an integer
/// parameter each launch passes the same constant for
/// ([`LaunchDims::param_values`](super::barriers::LaunchDims)) replaced by
/// that constant (expression ids, spans and text positions unchanged), when
/// the kernel never writes the parameter; `None` when there is none.
pub fn with_block_dim_params(
    f: &Function,
    launch: &super::barriers::LaunchDims,
) -> Option<Function> {
    use crate::ir::{Builtin, Dim, UnOp};
    if f.kind != crate::ir::FunctionKind::Kernel
        || (launch.param_block_dims.iter().all(Option::is_none)
            && launch.param_values.iter().all(Option::is_none)
            && launch.template_block_dims.iter().all(Option::is_none)
            && launch.name_block_dims.iter().all(Option::is_none))
    {
        return None;
    }
    let block_dim = |d: u8| {
        ExprKind::Builtin(Builtin::BlockDim(match d {
            0 => Dim::X,
            1 => Dim::Y,
            _ => Dim::Z,
        }))
    };
    // (session 13) Template parameters that equal a block dimension, unless
    // every launch gives their value anyway.
    let template_subst: Vec<(u32, ExprKind)> = launch
        .template_block_dims
        .iter()
        .enumerate()
        .filter_map(|(p, d)| {
            let d = (*d)?;
            let known = launch.template_values.get(p).copied().flatten().is_some();
            (!known).then(|| (p as u32, block_dim(d)))
        })
        .collect();
    let mut subst: Vec<(VarId, ExprKind)> = Vec::new();
    for (i, v) in f.vars.iter().enumerate() {
        let Some(pos) = v.param_position else {
            continue;
        };
        let kind = match (
            launch.param_block_dims.get(pos as usize),
            launch.param_values.get(pos as usize),
        ) {
            (Some(Some(d)), _) => block_dim(*d),
            (_, Some(Some(c))) => ExprKind::Int(*c),
            _ => continue,
        };
        if v.by_ref || !is_int(&v.ty) {
            continue;
        }
        let id = VarId(i as u32);
        let is_v = |x: ExprId| matches!(f.expr(x).kind, ExprKind::Var(w) if w == id);
        let written = f.exprs.iter().any(|e| match &e.kind {
            ExprKind::Assign { lhs: x, .. }
            | ExprKind::IncDec { target: x, .. }
            | ExprKind::Unary(UnOp::AddrOf, x) => is_v(*x),
            _ => false,
        });
        if written {
            continue;
        }
        subst.push((id, kind));
    }
    if subst.is_empty()
        && template_subst.is_empty()
        && launch.name_block_dims.iter().all(Option::is_none)
    {
        return None;
    }
    let mut g = f.clone();
    for e in g.exprs.iter_mut() {
        if let ExprKind::Var(v) = e.kind
            && let Some((_, k)) = subst.iter().find(|(w, _)| *w == v)
        {
            e.kind = k.clone();
        } else if let ExprKind::TemplateParam(p) = e.kind
            && let Some((_, k)) = template_subst.iter().find(|(q, _)| *q == p)
        {
            e.kind = k.clone();
        } else if let ExprKind::Name(n) = &e.kind
            && let Some(d) = launch
                .name_block_dims
                .iter()
                .position(|h| *h == Some(super::barriers::name_hash(n)))
        {
            e.kind = block_dim(d as u8);
        }
    }
    Some(g)
}

fn is_dim3(t: &Type) -> bool {
    matches!(t, Type::Named(n) | Type::Record { name: n, .. } if n == "dim3" || n.ends_with("::dim3") || n == "uint3")
}

fn is_int(t: &Type) -> bool {
    matches!(t, Type::Scalar(s) if s.is_integral())
}

/// The dimensions held by the `dim3` local `v` (see [`block_dims`]) where
/// it is read at `at`, at recursion depth `depth` of [`host_const`] (a
/// member read in another member's value recurses). (issue 8, session 13;
/// audit 20261216 #5, hybridsort's `threads.x = 128` after the
/// `bucketcount` launch) An assignment after the read counts only when a
/// loop encloses both.
fn dim3_var_at(
    f: &Function,
    v: VarId,
    file: &[&Function],
    depth: u32,
    at: crate::ir::Span,
) -> [Option<u32>; 3] {
    if f.var(v).param_position.is_some() || depth > 8 {
        return [None; 3];
    }
    let mut decl: Option<Option<ExprId>> = None;
    for s in &f.stmts {
        if let StmtKind::Decl { var, init } = &s.kind
            && *var == v
        {
            if decl.is_some() {
                return [None; 3];
            }
            decl = Some(*init);
        }
    }
    let mut out = match decl {
        Some(Some(init)) => block_dims_at(f, init, file, depth + 1),
        Some(None) => [Some(1), Some(1), Some(1)],
        None => return [None; 3],
    };
    let pos = |s: &crate::ir::Span| (s.line, s.col);
    let contains = |outer: &crate::ir::Span, p: (u32, u32)| {
        pos(outer) <= p && p <= (outer.end_line, outer.end_col)
    };
    // Whether what happens at `p` may run before the read: it comes first
    // in the text, or a loop encloses both.
    let may_precede = |p: (u32, u32)| {
        p < pos(&at)
            || f.stmts.iter().any(|s| {
                matches!(
                    s.kind,
                    StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. }
                ) && contains(&s.span, p)
                    && contains(&s.span, pos(&at))
            })
    };
    let mut assigned = [false; 3];
    for e in &f.exprs {
        let (lhs, rhs, op) = match &e.kind {
            ExprKind::Assign { op, lhs, rhs } => (*lhs, Some(*rhs), op.is_some()),
            ExprKind::IncDec { target, .. } => (*target, None, true),
            _ => continue,
        };
        if !may_precede(pos(&e.span)) {
            continue;
        }
        match &f.expr(lhs).kind {
            ExprKind::Var(w) if *w == v => return [None; 3],
            ExprKind::Member { base, field, .. } if matches!(f.expr(*base).kind, ExprKind::Var(w) if w == v) =>
            {
                let Some(d) = ["x", "y", "z"].iter().position(|m| m == field) else {
                    continue;
                };
                let value = if op {
                    None
                } else {
                    rhs.and_then(|r| {
                        host_const(f, r, depth, file).and_then(|x| u32::try_from(x).ok())
                    })
                };
                // (session 13, myocyte's `threads.y = 1` in both arms of
                // an `if`) Assignments that agree keep their value.
                out[d] = if assigned[d] && out[d] != value {
                    None
                } else {
                    value
                };
                assigned[d] = true;
            }
            _ => {}
        }
    }
    out
}

/// Element-wise agreement: a position keeps its value when both sides hold
/// the same one, else it becomes unknown.
pub fn agree<T: PartialEq + Copy, const N: usize>(
    a: [Option<T>; N],
    b: [Option<T>; N],
) -> [Option<T>; N] {
    std::array::from_fn(|i| if a[i] == b[i] { a[i] } else { None })
}

/// What a name means in a launching function `f`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalName {
    /// Not a parameter, local or template parameter of `f`.
    NotLocal,
    /// A local whose only definition is a constant (`const int BS = 128;`),
    /// with that value (every local of that name, if shadowed, agrees).
    Const(i64),
    /// A parameter, template parameter or non-constant local: it hides any
    /// global of the same name and has no known value.
    Unknown,
}

/// The meaning of `name` in `f` (see [`LocalName`]).
pub fn local_name(f: &Function, name: &str) -> LocalName {
    if f.template_params.iter().any(|p| p.name == name) {
        return LocalName::Unknown;
    }
    let mut out = LocalName::NotLocal;
    for (i, v) in f.vars.iter().enumerate() {
        if v.name != name {
            continue;
        }
        let value = if v.param_position.is_some() {
            None
        } else {
            u32::try_from(i)
                .ok()
                .and_then(|i| single_def(f, i))
                .and_then(|init| const_value(f, init))
        };
        out = match (out, value) {
            (LocalName::NotLocal, Some(x)) => LocalName::Const(x),
            (LocalName::Const(y), Some(x)) if x == y => LocalName::Const(x),
            _ => return LocalName::Unknown,
        };
    }
    out
}

/// Which template arguments of a launch of the kernel defined by `def_text`
/// (whose lowered template parameters are `params`) give the value of a
/// non-type parameter at the same position of `params`.
///
/// Arguments map to parameters by position, so the mapping is trusted only
/// up to the first parameter that the lowering did not record as written:
/// a pack (`typename... Ts`, `int... Ns`: it takes every further argument)
/// or an unnamed parameter (`template <int, int N>`: the lowering drops it,
/// which would shift the positions after it). Type parameters are `false`.
pub fn template_value_slots(
    def_text: &str,
    params: &[crate::ir::TemplateParam],
) -> [bool; MAX_TEMPLATE_VALUES] {
    let mut out = [false; MAX_TEMPLATE_VALUES];
    let Some(pieces) = template_header(def_text) else {
        return out;
    };
    for (i, piece) in pieces.iter().enumerate().take(MAX_TEMPLATE_VALUES) {
        let Some(p) = params.get(i) else { break };
        if piece.contains("...") || !has_word(piece, &p.name) {
            break;
        }
        out[i] = !p.is_type;
    }
    out
}

/// The parameters of the `template <…>` prefix of a definition's text, split
/// at top-level commas (`None` when the text has no such prefix).
fn template_header(text: &str) -> Option<Vec<&str>> {
    let rest = text.trim_start().strip_prefix("template")?.trim_start();
    let body = rest.strip_prefix('<')?;
    let (mut angle, mut paren) = (0i32, 0i32);
    let mut pieces = Vec::new();
    let mut start = 0;
    for (i, c) in body.char_indices() {
        match c {
            '(' | '[' | '{' => paren += 1,
            ')' | ']' | '}' => paren -= 1,
            '<' if paren == 0 => angle += 1,
            '>' if paren == 0 => {
                if angle == 0 {
                    pieces.push(body[start..i].trim());
                    return Some(pieces.into_iter().filter(|p| !p.is_empty()).collect());
                }
                angle -= 1;
            }
            ',' if paren == 0 && angle == 0 => {
                pieces.push(body[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// Whether `name` occurs in `text` as a whole identifier.
fn has_word(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.split(|c: char| !is_ident(c)).any(|w| w == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::TemplateParam;

    fn params(list: &[(&str, bool)]) -> Vec<TemplateParam> {
        list.iter()
            .map(|(name, is_type)| TemplateParam {
                name: (*name).to_string(),
                is_type: *is_type,
            })
            .collect()
    }

    #[test]
    fn template_headers_split_at_top_level_commas() {
        assert_eq!(
            template_header(
                "template <typename T = std::pair<int, int>, int N = (3 > 2)>\nvoid f()"
            ),
            Some(vec!["typename T = std::pair<int, int>", "int N = (3 > 2)"])
        );
        assert_eq!(
            template_header("template<class A, template <class> class C>>"),
            Some(vec!["class A", "template <class> class C"])
        );
        assert_eq!(template_header("template <>\nvoid f()"), Some(vec![]));
        assert_eq!(template_header("__global__ void k()"), None);
        assert_eq!(template_header("template <int N"), None);
    }

    #[test]
    fn slots_stop_at_packs_and_unnamed_parameters() {
        let s = template_value_slots(
            "template <typename F, int N> __global__ void k()",
            &params(&[("F", true), ("N", false)]),
        );
        assert_eq!(&s[..3], &[false, true, false]);
        let s = template_value_slots(
            "template <int, int N> __global__ void k()",
            &params(&[("N", false)]),
        );
        assert_eq!(&s[..2], &[false, false]);
        let s = template_value_slots(
            "template <int N, typename... Ts, int M> __global__ void k()",
            &params(&[("N", false), ("Ts", true), ("M", false)]),
        );
        assert_eq!(&s[..3], &[true, false, false]);
        let s = template_value_slots("__global__ void k()", &[]);
        assert!(s.iter().all(|b| !b));
    }
}
