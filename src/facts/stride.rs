//! Stride: the affine form of every expression, propagated by a crepe
//! Datalog program through operators, assignments, merges, loops and calls.
//!
//! Forms live in the lattice of [`super::affine`]; the program works on
//! interned form ids and calls the domain's operators from its rules. A
//! derived `Form(e, f)` says "`e` can have form `f`"; the form of `e` is
//! the join of all of them. Rules:
//! - leaves (constants, thread/block indices, launch dimensions, template
//!   values, device-function summaries, opaque values) have their form;
//! - operators combine their operands' forms (`+`, `-`, `*`, shifts by
//!   constants, `/` and `%` where the result stays affine within a warp);
//! - a variable read has the forms of the definitions that reach it
//!   ([`super::dataflow`]);
//! - the merge rule: a read after a branch on a thread-dependent condition
//!   of a value assigned inside it is unknown;
//! - a read at a loop head (some definition reaches it around the back
//!   edge) has the forms it enters the loop with, widened to any invariant
//!   offset; if a value coming around the back edge has other thread
//!   coefficients (`i += threadIdx.x`), the read is unknown. Back-edge
//!   values never feed forms directly, so the program terminates.
//!
//! Every expression's set of candidate forms is capped (see [`CAP`]); past
//! the cap, new candidates are joined with the earlier ones (a widening),
//! which keeps cross products bounded.

use super::affine::{self, Affine, op};
use super::barriers::LaunchDims;
use super::relations::Relations;
use super::uniformity::Uniformity;
use crate::ir::{BinOp, Builtin, ExprId, ExprKind, Function, UnOp};
use std::cell::RefCell;
use std::collections::HashMap;

/// Candidate forms kept per expression before it is declared unknown.
pub const CAP: usize = 8;

/// Interned id of the all-unknown form.
const UNKNOWN: u32 = 0;
/// Interned id of the thread-invariant form with nothing else known.
const INVARIANT: u32 = 1;

/// The forms and operand names of one run of the program.
struct FormTable {
    forms: Vec<Affine>,
    ids: HashMap<Affine, u32>,
    /// Operand texts of multiplications (a symbolic multiplier's name).
    texts: HashMap<u32, String>,
    warp_aligned: bool,
    /// Distinct candidate forms derived per expression so far.
    per_expr: HashMap<u32, Vec<u32>>,
}

impl FormTable {
    fn new(warp_aligned: bool) -> FormTable {
        let mut t = FormTable {
            forms: Vec::new(),
            ids: HashMap::new(),
            texts: HashMap::new(),
            warp_aligned,
            per_expr: HashMap::new(),
        };
        t.intern(Affine::unknown_form());
        t.intern(affine::invariant());
        t
    }

    fn intern(&mut self, a: Affine) -> u32 {
        if let Some(id) = self.ids.get(&a) {
            return *id;
        }
        let id = self.forms.len() as u32;
        self.forms.push(a.clone());
        self.ids.insert(a, id);
        id
    }

    fn get(&self, id: u32) -> &Affine {
        &self.forms[id as usize]
    }

    /// Intern `a` as a candidate of expression `e`. Past the cap, the
    /// candidate is the join of `a` with every candidate so far: each such
    /// join is strictly coarser or equal, and the lattice has finite
    /// height, so an expression gets finitely many candidates.
    fn candidate(&mut self, e: u32, a: Affine) -> u32 {
        let id = self.intern(a);
        self.candidate_id(e, id)
    }

    /// [`FormTable::candidate`] for an interned form.
    fn candidate_id(&mut self, e: u32, id: u32) -> u32 {
        let seen = self.per_expr.get(&e).map_or(0, Vec::len);
        if seen < CAP {
            let seen = self.per_expr.entry(e).or_default();
            if !seen.contains(&id) {
                seen.push(id);
            }
            return id;
        }
        let seen = self.per_expr.get(&e).cloned().unwrap_or_default();
        if seen.contains(&id) {
            return id;
        }
        let mut joined = self.forms[id as usize].clone();
        for s in &seen {
            joined = joined.join(&self.forms[*s as usize]);
        }
        let j = self.intern(joined);
        let seen = self.per_expr.entry(e).or_default();
        if !seen.contains(&j) {
            seen.push(j);
        }
        j
    }
}

thread_local! {
    /// Tables of the runs in progress on this thread (a stack, so that a
    /// run started while another is set up cannot see the other's forms).
    static TABLES: RefCell<Vec<FormTable>> = const { RefCell::new(Vec::new()) };
}

/// The operators the rules call, on interned ids.
mod ops {
    use super::{FormTable, TABLES, UNKNOWN, affine};

    fn with<R>(default: R, f: impl FnOnce(&mut FormTable) -> R) -> R {
        TABLES.with(|t| match t.borrow_mut().last_mut() {
            Some(table) => f(table),
            None => default,
        })
    }

    pub fn unary(e: u32, op: u8, x: u32) -> u32 {
        with(UNKNOWN, |t| {
            let a = affine::unary(op, t.get(x));
            t.candidate(e, a)
        })
    }

    pub fn binary(e: u32, op: u8, x: u32, y: u32, a: u32, b: u32, uniform: bool) -> u32 {
        with(UNKNOWN, |t| {
            let r = affine::binary(
                op,
                t.get(x),
                t.get(y),
                t.texts.get(&a).map(String::as_str),
                t.texts.get(&b).map(String::as_str),
                uniform,
                t.warp_aligned,
            );
            t.candidate(e, r)
        })
    }

    pub fn widen(u: u32, x: u32) -> u32 {
        with(UNKNOWN, |t| {
            let a = affine::widen(t.get(x));
            t.candidate(u, a)
        })
    }

    pub fn candidate(e: u32, x: u32) -> u32 {
        with(UNKNOWN, |t| t.candidate_id(e, x))
    }

    /// A pointer's form in its new element units (unknown when they do
    /// not divide).
    pub fn rescale(e: u32, x: u32, from: u64, to: u64) -> u32 {
        with(UNKNOWN, |t| match t.get(x).rescale(from, to) {
            Some(a) => t.candidate(e, a),
            None => UNKNOWN,
        })
    }

    pub fn same_coefs(x: u32, y: u32) -> bool {
        with(false, |t| t.get(x).coef == t.get(y).coef)
    }
}

/// The Datalog program (crepe generates undocumented items).
#[allow(missing_docs)]
mod program {
    use super::{UNKNOWN, ops};
    use crepe::crepe;

    crepe! {
        @input
        pub struct Leaf(pub u32, pub u32);
        @input
        pub struct Same(pub u32, pub u32);
        // (e, a, from, to): `e` is pointer `a` cast from `from`-byte to
        // `to`-byte elements (session 7).
        @input
        pub struct Rescale(pub u32, pub u32, pub u64, pub u64);
        @input
        pub struct Op1(pub u32, pub u8, pub u32);
        @input
        pub struct Op2(pub u32, pub u8, pub u32, pub u32, pub bool);
        @input
        pub struct DefValue(pub u32, pub u32);
        @input
        pub struct DefLeaf(pub u32, pub u32);
        @input
        pub struct Reaches(pub u32, pub u32);
        @input
        pub struct BackReach(pub u32, pub u32);
        @input
        pub struct Carried(pub u32);
        @input
        pub struct DefUnder(pub u32, pub u32);
        @input
        pub struct UseUnder(pub u32, pub u32);
        @input
        pub struct ThreadDep(pub u32);
        // (read, form): a read of a loop variable whose values are known.
        @input
        pub struct ValueLeaf(pub u32, pub u32);

        @output
        pub struct Form(pub u32, pub u32);

        struct DefForm(u32, u32);
        struct Diverged(u32);
        struct Valued(u32);

        Valued(u) <- ValueLeaf(u, _);
        Form(u, f) <- ValueLeaf(u, f);

        Form(e, f) <- Leaf(e, f);
        // Recursive rules start from a derived relation where they can:
        // crepe evaluates clauses in the order written, so a new fact is
        // joined with the inputs through their indices instead of every
        // round scanning an input (`Reaches` is large) in full.
        Form(e, g) <- Form(a, f), Same(e, a), let g = ops::candidate(e, f);
        Form(e, g) <- Form(a, f), Rescale(e, a, from, to), let g = ops::rescale(e, f, from, to);
        Form(e, g) <- Form(a, f), Op1(e, op, a), let g = ops::unary(e, op, f);
        Form(e, g) <- Op2(e, op, a, b, uni), Form(a, x), Form(b, y),
            let g = ops::binary(e, op, x, y, a, b, uni);

        DefForm(d, f) <- Form(e, f), DefValue(d, e);
        DefForm(d, f) <- DefLeaf(d, f);

        // The merge rule.
        Diverged(u) <- Reaches(u, d), DefUnder(d, c), ThreadDep(c), !UseUnder(u, c);
        Form(u, UNKNOWN) <- Diverged(u);

        // Straight-line and merged values.
        Form(u, g) <- DefForm(d, f), Reaches(u, d), !Carried(u), !Valued(u),
            let g = ops::candidate(u, f);
        // Loop heads: the entry values, widened; a back-edge value with other
        // thread coefficients makes the read unknown.
        Form(u, g) <- DefForm(d, f), Reaches(u, d), Carried(u), !Valued(u), !BackReach(u, d),
            let g = ops::widen(u, f);
        Form(u, UNKNOWN) <- BackReach(u, d), !Valued(u), DefForm(d, f), Form(u, g),
            (!ops::same_coefs(f, g));
    }
}

/// The affine forms of one function's expressions.
pub struct AffineCx<'a> {
    f: &'a Function,
    forms: Vec<Affine>,
    /// Offsets of pointer parameters, from the callers.
    param_pointers: Vec<Option<Affine>>,
}

impl<'a> AffineCx<'a> {
    /// Run the stride program on `f`, its parameters thread-invariant.
    pub fn new(
        f: &'a Function,
        r: &'a Relations,
        u: &'a Uniformity,
        launch: LaunchDims,
        callees: &'a super::Callees,
    ) -> Self {
        AffineCx::with_params(f, r, u, launch, callees, &super::ParamFacts::default())
    }

    /// Run the stride program on `f`, with what the callers pass for its
    /// parameters: a parameter's value has the joined form of the
    /// arguments (for pointers: their offset), else it is unknown when an
    /// argument depends on the thread, else thread-invariant.
    pub fn with_params(
        f: &'a Function,
        r: &'a Relations,
        u: &'a Uniformity,
        launch: LaunchDims,
        callees: &'a super::Callees,
        params: &super::ParamFacts,
    ) -> Self {
        AffineCx::with_loops(
            f,
            r,
            u,
            launch,
            callees,
            params,
            &super::loops::LoopFacts::default(),
        )
    }

    /// [`AffineCx::with_params`], with the value sets of loop variables
    /// from the loop facts (reads of `s` in `for (s = 1; s < 256; s *= 2)`
    /// take one of `1, 2, …, 128`).
    pub fn with_loops(
        f: &'a Function,
        r: &'a Relations,
        u: &'a Uniformity,
        launch: LaunchDims,
        callees: &'a super::Callees,
        params: &super::ParamFacts,
        loops: &super::loops::LoopFacts,
    ) -> Self {
        // Warps start at x multiples of 32 when blockDim.x is one, and in
        // any one-dimensional block (issue 8: llm.c's `block_size` ints).
        let warp_aligned = launch.block[0].is_some_and(|bx| bx % 32 == 0)
            || (launch.block[1] == Some(1) && launch.block[2] == Some(1));
        TABLES.with(|t| t.borrow_mut().push(FormTable::new(warp_aligned)));
        let candidates = run(f, r, u, &launch, callees, params, loops);
        let table = TABLES.with(|t| t.borrow_mut().pop());
        let mut forms: Vec<Option<Affine>> = vec![None; f.exprs.len()];
        if let Some(table) = table {
            for (e, id) in candidates {
                let Some(slot) = forms.get_mut(e as usize) else {
                    continue;
                };
                let a = table.get(id);
                *slot = Some(match slot.take() {
                    None => a.clone(),
                    Some(prev) => prev.join(a),
                });
            }
        }
        let forms = forms
            .into_iter()
            .enumerate()
            .map(|(i, a)| a.unwrap_or_else(|| affine::opaque(u.is_uniform(i as u32))))
            .collect();
        AffineCx {
            f,
            forms,
            param_pointers: params.pointer_forms.clone(),
        }
    }

    /// For an access whose base is a local pointer variable, the affine
    /// form of that pointer's value (its offset from the array it points
    /// into, in elements); `None` for arrays and parameters.
    pub fn local_pointer_form(&self, a: &crate::ir::Access) -> Option<Affine> {
        let v = a.var?;
        let var = self.f.var(v);
        if let Some(i) = var.param_position {
            return self.param_pointers.get(i as usize).cloned().flatten();
        }
        if !matches!(var.ty, crate::ir::Type::Pointer(_)) {
            return None;
        }
        let mut stack = vec![a.expr];
        while let Some(x) = stack.pop() {
            if matches!(self.f.expr(x).kind, ExprKind::Var(w) if w == v) {
                return Some(self.form(x));
            }
            stack.extend(self.f.child_exprs(x));
        }
        None
    }

    /// The function the forms belong to.
    pub fn function(&self) -> &'a Function {
        self.f
    }

    /// The affine form of expression `e` (the join of its candidates).
    pub fn form(&self, e: ExprId) -> Affine {
        self.forms
            .get(e.0 as usize)
            .cloned()
            .unwrap_or_else(Affine::unknown_form)
    }
}

/// Build the input relations, run the program, return `(expr, form id)`.
fn run(
    f: &Function,
    r: &Relations,
    u: &Uniformity,
    launch: &LaunchDims,
    callees: &super::Callees,
    params: &super::ParamFacts,
    loops: &super::loops::LoopFacts,
) -> Vec<(u32, u32)> {
    use program::*;
    let mut rt = Crepe::new();
    let leaf =
        |a: Affine| TABLES.with(|t| t.borrow_mut().last_mut().map_or(UNKNOWN, |t| t.intern(a)));
    for (e, vals) in &loops.value_reads {
        if let Some(a) = Affine::with_values(vals.clone()) {
            rt.extend([ValueLeaf(*e, leaf(a))]);
        }
    }
    let name = |e: ExprId| {
        let text = f.expr_text(e);
        TABLES.with(|t| {
            if let Some(t) = t.borrow_mut().last_mut() {
                t.texts.insert(e.0, text);
            }
        });
    };
    let has_reach: std::collections::HashSet<u32> =
        r.flow.reaches.iter().map(|&(u, _)| u).collect();
    for (i, ex) in f.exprs.iter().enumerate() {
        let e = i as u32;
        let uni = u.is_uniform(e);
        let opaque = || Leaf(e, if uni { INVARIANT } else { UNKNOWN });
        match &ex.kind {
            ExprKind::Int(v) => rt.extend([Leaf(e, leaf(affine::constant(*v)))]),
            ExprKind::Bool(b) => rt.extend([Leaf(e, leaf(affine::constant(*b as i64)))]),
            ExprKind::SizeOf(Some(n)) => rt.extend([Leaf(e, leaf(affine::constant(*n as i64)))]),
            ExprKind::Builtin(Builtin::ThreadIdx(d)) => {
                rt.extend([Leaf(e, leaf(affine::thread_index(*d)))])
            }
            ExprKind::Builtin(Builtin::BlockDim(d)) => {
                let i = match d {
                    crate::ir::Dim::X => 0,
                    crate::ir::Dim::Y => 1,
                    crate::ir::Dim::Z => 2,
                };
                rt.extend([match launch.block[i] {
                    Some(v) => Leaf(e, leaf(affine::constant(v as i64))),
                    None => Leaf(e, INVARIANT),
                }])
            }
            ExprKind::Builtin(Builtin::WarpSize) => {
                rt.extend([Leaf(e, leaf(affine::constant(32)))])
            }
            ExprKind::Builtin(Builtin::BlockIdx(_)) => {
                rt.extend([Leaf(e, leaf(affine::block_index()))])
            }
            ExprKind::TemplateParam(p) => rt.extend([
                match launch.template_values.get(*p as usize).copied().flatten() {
                    Some(v) => Leaf(e, leaf(affine::constant(v))),
                    None => opaque(),
                },
            ]),
            // (session 7, audit #45) A pointer cast to other element sizes
            // (`(float *)(bytes + y * pitch)`): the offset in the new units.
            ExprKind::Cast(t, a) => {
                let to = match t {
                    crate::ir::Type::Pointer(_) => t.element().and_then(crate::ir::Type::bytes),
                    _ => None,
                };
                match (to, pointer_elem_bytes(f, *a, 0)) {
                    (Some(to), Some(from)) if to != from && to > 0 && from > 0 => {
                        rt.extend([Rescale(e, a.0, from, to)])
                    }
                    _ => rt.extend([Same(e, a.0)]),
                }
            }
            ExprKind::Unary(UnOp::Plus, a) => rt.extend([Same(e, a.0)]),
            ExprKind::Unary(UnOp::Neg, a) => rt.extend([Op1(e, op::NEG, a.0)]),
            ExprKind::Binary(b, x, y) => match binop(*b) {
                Some(o) => {
                    if o == op::MUL {
                        name(*x);
                        name(*y);
                    }
                    rt.extend([Op2(e, o, x.0, y.0, uni)])
                }
                None => rt.extend([opaque()]),
            },
            ExprKind::Call { callee, args, .. }
                if (callee == "__mul24" || callee == "__umul24") && args.len() == 2 =>
            {
                name(args[0]);
                name(args[1]);
                rt.extend([Op2(e, op::MUL, args[0].0, args[1].0, uni)])
            }
            // (issue 8, class 2) Cooperative-group ranks and sizes as
            // affine forms over the thread index.
            ExprKind::Call { .. }
                if super::coop::group_method(f, crate::ir::ExprId(e)).is_some() =>
            {
                match coop_form(f, crate::ir::ExprId(e), launch) {
                    Some(form) => rt.extend([Leaf(e, leaf(form))]),
                    None => rt.extend([opaque()]),
                }
            }
            // A parameterless function's summary; not for methods, whose
            // value depends on their object.
            ExprKind::Call {
                callee,
                args,
                receiver: None,
            } if args.is_empty() => match callees.get(callee).and_then(|s| s.form.clone()) {
                Some(form) => rt.extend([Leaf(e, leaf(form))]),
                None => rt.extend([opaque()]),
            },
            // Reads: through the definitions that reach them; a read that
            // no definition reaches is opaque.
            ExprKind::Var(_) => {
                if !has_reach.contains(&e) {
                    rt.extend([opaque()])
                }
            }
            ExprKind::Assign { op: None, rhs, .. } => rt.extend([Same(e, rhs.0)]),
            ExprKind::Assign {
                op: Some(b),
                lhs,
                rhs,
            } => match binop(*b).filter(|o| matches!(*o, op::ADD | op::SUB | op::MUL)) {
                Some(o) => {
                    if o == op::MUL {
                        name(*lhs);
                        name(*rhs);
                    }
                    rt.extend([Op2(e, o, lhs.0, rhs.0, uni)])
                }
                None => rt.extend([opaque()]),
            },
            ExprKind::IncDec {
                target, increment, ..
            } => rt.extend([Op1(e, if *increment { op::INC } else { op::DEC }, target.0)]),
            _ => rt.extend([opaque()]),
        }
    }
    let with_value: std::collections::HashSet<u32> =
        r.flow.def_value.iter().map(|&(d, _)| d).collect();
    rt.extend(r.flow.def_value.iter().map(|&(d, e)| DefValue(d, e)));
    // Definitions without a value expression: declarations without an
    // initialiser (some invariant value) and parameters on entry.
    let first_param_def = (f.exprs.len() + f.stmts.len()) as u32;
    for &(d, v) in &r.flow.def_var {
        if with_value.contains(&d) {
            continue;
        }
        let position = (d >= first_param_def)
            .then(|| f.vars.get(v as usize).and_then(|var| var.param_position))
            .flatten();
        let form = match position {
            None => INVARIANT,
            Some(p) => {
                let p = p as usize;
                let pointer = matches!(
                    f.vars.get(v as usize).map(|var| &var.ty),
                    Some(crate::ir::Type::Pointer(_) | crate::ir::Type::Array(..))
                );
                let known = if pointer {
                    params.pointer_forms.get(p).cloned().flatten()
                } else {
                    params.forms.get(p).cloned().flatten()
                };
                match known {
                    Some(a) => leaf(a),
                    None if params.dims.get(p).copied().unwrap_or(0) != 0 => UNKNOWN,
                    None => INVARIANT,
                }
            }
        };
        rt.extend([DefLeaf(d, form)]);
    }
    rt.extend(r.flow.reaches.iter().map(|&(u, d)| Reaches(u, d)));
    rt.extend(r.flow.back_reaches.iter().map(|&(u, d)| BackReach(u, d)));
    rt.extend(r.flow.back_reaches.iter().map(|&(u, _)| Carried(u)));
    rt.extend(r.flow.def_under.iter().map(|&(d, c)| DefUnder(d, c)));
    rt.extend(r.flow.use_under.iter().map(|&(u, c)| UseUnder(u, c)));
    let mut conds: Vec<u32> = r.flow.def_under.iter().map(|&(_, c)| c).collect();
    conds.sort_unstable();
    conds.dedup();
    rt.extend(
        conds
            .into_iter()
            .filter(|c| !u.is_uniform(*c))
            .map(ThreadDep),
    );
    let (forms,) = rt.run_with_hasher::<rustc_hash::FxBuildHasher>();
    forms.into_iter().map(|Form(e, f)| (e, f)).collect()
}

/// The stride program's operator for a binary operator, if it has one.
fn binop(b: BinOp) -> Option<u8> {
    Some(match b {
        BinOp::Add => op::ADD,
        BinOp::Sub => op::SUB,
        BinOp::Mul => op::MUL,
        BinOp::Shl => op::SHL,
        BinOp::Div => op::DIV,
        BinOp::Rem => op::REM,
        BinOp::Shr => op::SHR,
        _ => return None,
    })
}

/// (issue 8, class 2) The affine form of a recognised cooperative-group
/// method (see `coop::group_method`) under the launch's block dimensions:
/// a block's `thread_rank()` is `threadIdx.x + bx * (threadIdx.y + by *
/// threadIdx.z)`; the grid's adds `blockIdx.x * bx` for 1-D grids of 1-D
/// blocks; a tile of `N` (a multiple of 32) has, within one warp, rank
/// `threadIdx.x` (up to a warp-invariant offset) and a warp-invariant rank
/// among tiles; sizes are constants when the block is known. `None` (opaque)
/// otherwise.
fn coop_form(f: &Function, e: ExprId, launch: &LaunchDims) -> Option<affine::Affine> {
    use super::coop::Group;
    use crate::ir::Dim;
    let (g, m) = super::coop::group_method(f, e)?;
    let b = launch.block;
    let block_rank = || -> Option<affine::Affine> {
        let x = affine::thread_index(Dim::X);
        match (b[0], b[1], b[2]) {
            (_, Some(1), Some(1)) => Some(x),
            (Some(bx), Some(_), Some(1)) => {
                Some(x.add_form(&affine::thread_index(Dim::Y).times(bx as i64)))
            }
            (Some(bx), Some(by), Some(_)) => Some(
                x.add_form(&affine::thread_index(Dim::Y).times(bx as i64))
                    .add_form(&affine::thread_index(Dim::Z).times(bx as i64 * by as i64)),
            ),
            _ => None,
        }
    };
    let block_size = || -> Option<i64> { Some(b[0]? as i64 * b[1]? as i64 * b[2]? as i64) };
    match (g, m) {
        (Group::Block, "thread_rank") => block_rank(),
        (Group::Block, "size" | "num_threads") => block_size().map(affine::constant),
        (Group::Grid, "thread_rank") if b[1] == Some(1) && b[2] == Some(1) => {
            let bx = b[0]? as i64;
            Some(
                affine::block_index()
                    .times(bx)
                    .add_form(&affine::thread_index(Dim::X)),
            )
        }
        (Group::Tile(n), "thread_rank") if n % 32 == 0 && b[1] == Some(1) && b[2] == Some(1) => {
            Some(affine::thread_index(Dim::X).add_form(&affine::invariant()))
        }
        (Group::Tile(n), "meta_group_rank") if n % 32 == 0 => Some(affine::invariant()),
        (Group::Tile(n), "size" | "num_threads") => Some(affine::constant(n)),
        _ => None,
    }
}

/// The element size of pointer expression `e` (`p`, `p + i`, `(T *)q`),
/// when its type is known from a variable or a cast.
fn pointer_elem_bytes(f: &Function, e: ExprId, depth: u32) -> Option<u64> {
    use crate::ir::Type;
    if depth > 8 {
        return None;
    }
    match &f.expr(e).kind {
        ExprKind::Var(v) => match &f.var(*v).ty {
            t @ (Type::Pointer(_) | Type::Array(..)) => t.element().and_then(Type::bytes),
            _ => None,
        },
        ExprKind::Cast(t @ Type::Pointer(_), _) => t.element().and_then(Type::bytes),
        ExprKind::Cast(_, x) => pointer_elem_bytes(f, *x, depth + 1),
        ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => pointer_elem_bytes(f, *a, depth + 1)
            .or_else(|| match f.expr(*a).kind {
                ExprKind::Int(_) => pointer_elem_bytes(f, *b, depth + 1),
                _ => None,
            }),
        _ => None,
    }
}
