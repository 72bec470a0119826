//! Affine forms of index expressions in the thread indices:
//! `Σ c_d · threadIdx.d + (c0 + Σ m_i · u_i)` where each `c_d` is an integer,
//! a symbolic thread-invariant value, or unknown, and the rest is a constant
//! plus thread-invariant terms whose multipliers give its alignment.
//!
//! Variables are resolved through the reaching definitions of
//! [`super::dataflow`]; a read after a merge on a thread-dependent condition
//! (the merge rule) or of a loop-carried value with a thread-dependent
//! increment is unknown.

use super::barriers::LaunchDims;
use super::relations::Relations;
use super::uniformity::Uniformity;
use crate::ir::{BinOp, Builtin, Dim, ExprId, ExprKind, Function, UnOp};
use std::collections::{HashMap, HashSet};

/// A coefficient of a thread index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Coef {
    /// A known integer.
    Int(i64),
    /// Thread-invariant but not constant (e.g. `width`); the text names it.
    Sym(String),
    /// Not affine (or not known to be).
    Unknown,
}

impl Coef {
    fn add(&self, o: &Coef) -> Coef {
        match (self, o) {
            (Coef::Int(a), Coef::Int(b)) => {
                a.checked_add(*b).map(Coef::Int).unwrap_or(Coef::Unknown)
            }
            (Coef::Unknown, _) | (_, Coef::Unknown) => Coef::Unknown,
            (Coef::Int(0), x) | (x, Coef::Int(0)) => x.clone(),
            (Coef::Sym(a), Coef::Sym(b)) => Coef::Sym(format!("{a} + {b}")),
            (Coef::Sym(a), Coef::Int(b)) | (Coef::Int(b), Coef::Sym(a)) => {
                Coef::Sym(format!("{a} + {b}"))
            }
        }
    }
    fn scale(&self, k: &Scale) -> Coef {
        match (self, k) {
            (Coef::Int(0), _) => Coef::Int(0),
            (Coef::Unknown, _) | (_, Scale::Unknown) => Coef::Unknown,
            (Coef::Int(a), Scale::Int(b)) => {
                a.checked_mul(*b).map(Coef::Int).unwrap_or(Coef::Unknown)
            }
            (Coef::Int(1), Scale::Sym(s)) => Coef::Sym(s.clone()),
            (Coef::Int(a), Scale::Sym(s)) => Coef::Sym(format!("{a}·{s}")),
            (Coef::Sym(a), Scale::Int(1)) => Coef::Sym(a.clone()),
            (Coef::Sym(a), Scale::Int(b)) => Coef::Sym(format!("{b}·{a}")),
            (Coef::Sym(a), Scale::Sym(s)) => Coef::Sym(format!("{a}·{s}")),
        }
    }
    /// Whether this is the integer zero.
    pub fn is_zero(&self) -> bool {
        matches!(self, Coef::Int(0))
    }
}

/// A thread-invariant multiplier.
#[derive(Clone, Debug)]
enum Scale {
    Int(i64),
    Sym(String),
    Unknown,
}

/// The affine form of an expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Affine {
    /// Coefficients of threadIdx.x, .y, .z.
    pub coef: [Coef; 3],
    /// Constant part of the rest, when known.
    pub offset: Option<i64>,
    /// The thread-invariant, non-constant part of the rest is a multiple of
    /// this (0 when there is none; 1 when nothing is known about it).
    pub rest_multiple: u64,
    /// Whether the rest includes a block index (`blockIdx.d`): the value is a
    /// grid-wide, not a block-local, thread index.
    pub grid_offset: bool,
}

impl Affine {
    fn constant(v: i64) -> Affine {
        Affine {
            coef: [Coef::Int(0), Coef::Int(0), Coef::Int(0)],
            offset: Some(v),
            rest_multiple: 0,
            grid_offset: false,
        }
    }
    fn invariant(multiple: u64) -> Affine {
        Affine {
            coef: [Coef::Int(0), Coef::Int(0), Coef::Int(0)],
            offset: Some(0),
            rest_multiple: multiple,
            grid_offset: false,
        }
    }
    fn unknown() -> Affine {
        Affine {
            coef: [Coef::Unknown, Coef::Unknown, Coef::Unknown],
            offset: None,
            rest_multiple: 1,
            grid_offset: false,
        }
    }
    fn thread(d: usize) -> Affine {
        let mut a = Affine::constant(0);
        a.coef[d] = Coef::Int(1);
        a
    }
    /// Whether every coefficient is zero (the value is thread-invariant).
    pub fn is_invariant(&self) -> bool {
        self.coef.iter().all(Coef::is_zero)
    }
    fn add(&self, o: &Affine) -> Affine {
        Affine {
            coef: std::array::from_fn(|i| self.coef[i].add(&o.coef[i])),
            offset: self
                .offset
                .zip(o.offset)
                .and_then(|(a, b)| a.checked_add(b)),
            rest_multiple: gcd(self.rest_multiple, o.rest_multiple),
            grid_offset: self.grid_offset || o.grid_offset,
        }
    }
    fn neg(&self) -> Affine {
        self.scale(&Scale::Int(-1), None)
    }
    fn scale(&self, k: &Scale, k_multiple: Option<u64>) -> Affine {
        let offset_const = match k {
            Scale::Int(v) => self.offset.and_then(|o| o.checked_mul(*v)),
            _ => None,
        };
        // The rest becomes offset·k (invariant) + rest·k.
        let rest_multiple = match k {
            Scale::Int(v) => self.rest_multiple.saturating_mul(v.unsigned_abs()),
            _ => {
                let m = k_multiple.unwrap_or(1);
                let from_offset = self
                    .offset
                    .map(|o| o.unsigned_abs().saturating_mul(m))
                    .unwrap_or(1);
                gcd(self.rest_multiple.saturating_mul(m), from_offset)
            }
        };
        Affine {
            coef: std::array::from_fn(|i| self.coef[i].scale(k)),
            offset: match k {
                Scale::Int(_) => offset_const,
                _ => Some(0),
            },
            rest_multiple,
            grid_offset: self.grid_offset,
        }
    }
    /// A form about which nothing is known.
    pub fn unknown_form() -> Affine {
        Affine::unknown()
    }

    /// `self · k` for a constant `k`.
    pub fn times(&self, k: i64) -> Affine {
        self.scale(&Scale::Int(k), None)
    }

    /// `self + o`.
    pub fn add_form(&self, o: &Affine) -> Affine {
        self.add(o)
    }

    fn join(&self, o: &Affine) -> Affine {
        Affine {
            coef: std::array::from_fn(|i| {
                if self.coef[i] == o.coef[i] {
                    self.coef[i].clone()
                } else {
                    Coef::Unknown
                }
            }),
            offset: if self.offset == o.offset {
                self.offset
            } else {
                None
            },
            rest_multiple: gcd(self.rest_multiple, o.rest_multiple),
            grid_offset: self.grid_offset && o.grid_offset,
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Computes affine forms with memoisation.
pub struct AffineCx<'a> {
    f: &'a Function,
    u: &'a Uniformity,
    launch: LaunchDims,
    reaches: HashMap<u32, Vec<u32>>,
    def_value: HashMap<u32, u32>,
    def_under: HashMap<u32, Vec<u32>>,
    use_under: HashMap<u32, HashSet<u32>>,
    memo: HashMap<u32, Affine>,
    in_progress: HashSet<u32>,
    self_ref: bool,
    callees: &'a super::Callees,
}

impl<'a> AffineCx<'a> {
    /// A context for one function.
    pub fn new(
        f: &'a Function,
        r: &'a Relations,
        u: &'a Uniformity,
        launch: LaunchDims,
        callees: &'a super::Callees,
    ) -> Self {
        let mut reaches: HashMap<u32, Vec<u32>> = HashMap::new();
        for (use_e, d) in &r.flow.reaches {
            reaches.entry(*use_e).or_default().push(*d);
        }
        let mut def_under: HashMap<u32, Vec<u32>> = HashMap::new();
        for (d, c) in &r.flow.def_under {
            def_under.entry(*d).or_default().push(*c);
        }
        let mut use_under: HashMap<u32, HashSet<u32>> = HashMap::new();
        for (e, c) in &r.flow.use_under {
            use_under.entry(*e).or_default().insert(*c);
        }
        AffineCx {
            f,
            u,
            launch,
            reaches,
            def_value: r.flow.def_value.iter().copied().collect(),
            def_under,
            use_under,
            memo: HashMap::new(),
            in_progress: HashSet::new(),
            self_ref: false,
            callees,
        }
    }

    /// For an access whose base is a local pointer variable, the affine
    /// form of that pointer's value (its offset from the array it points
    /// into, in elements); `None` for arrays and parameters.
    pub fn local_pointer_form(&mut self, a: &crate::ir::Access) -> Option<Affine> {
        let v = a.var?;
        let var = self.f.var(v);
        if var.param_position.is_some() || !matches!(var.ty, crate::ir::Type::Pointer(_)) {
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

    /// The affine form of expression `e`.
    pub fn form(&mut self, e: ExprId) -> Affine {
        if let Some(a) = self.memo.get(&e.0) {
            return a.clone();
        }
        let a = self.compute(e);
        if !self.self_ref {
            self.memo.insert(e.0, a.clone());
        }
        a
    }

    fn scale_of(&mut self, e: ExprId) -> (Scale, Option<u64>) {
        let a = self.form(e);
        if !a.is_invariant() {
            return (Scale::Unknown, None);
        }
        match (a.offset, a.rest_multiple) {
            (Some(v), 0) => (Scale::Int(v), None),
            _ => {
                let mult = match (a.offset, a.rest_multiple) {
                    (Some(o), m) => gcd(o.unsigned_abs(), m),
                    _ => 1,
                };
                (Scale::Sym(self.f.expr_text(e)), Some(mult.max(1)))
            }
        }
    }

    fn compute(&mut self, e: ExprId) -> Affine {
        let f = self.f;
        match &f.expr(e).kind {
            ExprKind::Int(v) => Affine::constant(*v),
            ExprKind::Bool(b) => Affine::constant(*b as i64),
            ExprKind::SizeOf(Some(n)) => Affine::constant(*n as i64),
            ExprKind::Builtin(Builtin::ThreadIdx(d)) => Affine::thread(dim(*d)),
            ExprKind::Builtin(Builtin::BlockDim(d)) => match self.launch.block[dim(*d)] {
                Some(v) => Affine::constant(v as i64),
                None => Affine::invariant(1),
            },
            ExprKind::Builtin(Builtin::WarpSize) => Affine::constant(32),
            ExprKind::Builtin(Builtin::BlockIdx(_)) => Affine {
                grid_offset: true,
                ..Affine::invariant(1)
            },
            ExprKind::Cast(_, a) => self.form(*a),
            ExprKind::Unary(UnOp::Neg, a) => self.form(*a).neg(),
            ExprKind::Unary(UnOp::Plus, a) => self.form(*a),
            ExprKind::Binary(BinOp::Add, a, b) => {
                let (x, y) = (self.form(*a), self.form(*b));
                x.add(&y)
            }
            ExprKind::Binary(BinOp::Sub, a, b) => {
                let (x, y) = (self.form(*a), self.form(*b));
                x.add(&y.neg())
            }
            ExprKind::Binary(BinOp::Mul, a, b) => self.mul(*a, *b),
            ExprKind::Call { callee, args, .. }
                if (callee == "__mul24" || callee == "__umul24") && args.len() == 2 =>
            {
                self.mul(args[0], args[1])
            }
            ExprKind::Binary(BinOp::Shl, a, b) => match self.form(*b) {
                k if k.is_invariant()
                    && k.rest_multiple == 0
                    && k.offset.is_some_and(|s| (0..32).contains(&s)) =>
                {
                    let s = k.offset.unwrap_or(0);
                    self.form(*a).scale(&Scale::Int(1 << s), None)
                }
                _ => self.opaque(e),
            },
            ExprKind::Binary(op @ (BinOp::Div | BinOp::Rem | BinOp::Shr), a, b) => {
                let k = self.form(*b);
                let x = self.form(*a);
                let divisor = match (op, k.offset) {
                    (BinOp::Shr, Some(s))
                        if k.is_invariant() && k.rest_multiple == 0 && (0..32).contains(&s) =>
                    {
                        Some(1i64 << s)
                    }
                    (_, Some(v)) if k.is_invariant() && k.rest_multiple == 0 && v > 0 => Some(v),
                    _ => None,
                };
                if x.is_invariant() {
                    return match (x.offset, x.rest_multiple, divisor) {
                        (Some(o), 0, Some(d)) if *op != BinOp::Rem => Affine::constant(o / d),
                        (Some(o), 0, Some(d)) => Affine::constant(o % d),
                        _ => Affine::invariant(1),
                    };
                }
                // Within a warp whose lanes differ only in threadIdx.x by
                // less than 32: `x / (32·m)` is constant, `x % (32·m)` is `x`
                // up to a constant.
                let warp_aligned = self.launch.block[0].is_some_and(|bx| bx % 32 == 0)
                    && x.coef[0] == Coef::Int(1)
                    && x.coef[1].is_zero()
                    && x.coef[2].is_zero();
                match divisor {
                    Some(d) if warp_aligned && d % 32 == 0 => {
                        if *op == BinOp::Rem {
                            Affine {
                                offset: None,
                                rest_multiple: 1,
                                ..x
                            }
                        } else {
                            Affine::invariant(1)
                        }
                    }
                    _ => self.opaque(e),
                }
            }
            ExprKind::Var(_) => self.read(e),
            // The value of an assignment (a definition's value expression).
            ExprKind::Assign { op: None, rhs, .. } => self.form(*rhs),
            ExprKind::Assign {
                op: Some(BinOp::Add),
                lhs,
                rhs,
            } => {
                let (x, y) = (self.form(*lhs), self.form(*rhs));
                x.add(&y)
            }
            ExprKind::Assign {
                op: Some(BinOp::Sub),
                lhs,
                rhs,
            } => {
                let (x, y) = (self.form(*lhs), self.form(*rhs));
                x.add(&y.neg())
            }
            ExprKind::Assign {
                op: Some(BinOp::Mul),
                lhs,
                rhs,
            } => self.mul(*lhs, *rhs),
            ExprKind::IncDec {
                target, increment, ..
            } => {
                let x = self.form(*target);
                x.add(&Affine::constant(if *increment { 1 } else { -1 }))
            }
            ExprKind::Call { callee, args, .. } if args.is_empty() => {
                match self.callees.get(callee).and_then(|s| s.form.clone()) {
                    Some(form) => form,
                    None => self.opaque(e),
                }
            }
            _ => self.opaque(e),
        }
    }

    fn opaque(&self, e: ExprId) -> Affine {
        if self.u.is_uniform(e.0) {
            Affine::invariant(1)
        } else {
            Affine::unknown()
        }
    }

    fn mul(&mut self, a: ExprId, b: ExprId) -> Affine {
        let (x, y) = (self.form(a), self.form(b));
        let grid = x.grid_offset || y.grid_offset;
        let mut out = if y.is_invariant() {
            let (k, m) = self.scale_of(b);
            x.scale(&k, m)
        } else if x.is_invariant() {
            let (k, m) = self.scale_of(a);
            y.scale(&k, m)
        } else {
            Affine::unknown()
        };
        out.grid_offset = grid && out.coef.iter().all(|c| *c != Coef::Unknown);
        out
    }

    /// A variable read: join of the reaching definitions' values.
    fn read(&mut self, e: ExprId) -> Affine {
        let defs = self.reaches.get(&e.0).cloned().unwrap_or_default();
        if defs.is_empty() {
            // Parameters and uninitialised locals are thread-invariant.
            return if self.u.is_uniform(e.0) {
                Affine::invariant(1)
            } else {
                Affine::unknown()
            };
        }
        let mut acc: Option<Affine> = None;
        let mut loop_carried = false;
        let mut carried: Vec<Affine> = Vec::new();
        for d in defs {
            // Merge rule: assigned under a thread-dependent condition that
            // does not also enclose this read.
            let diverged = self.def_under.get(&d).is_some_and(|cs| {
                cs.iter().any(|c| {
                    !self.u.is_uniform(*c)
                        && !self.use_under.get(&e.0).is_some_and(|s| s.contains(c))
                })
            });
            if diverged {
                return Affine::unknown();
            }
            let Some(v) = self.def_value.get(&d).copied() else {
                acc = Some(acc.map_or(Affine::invariant(1), |a| a.join(&Affine::invariant(1))));
                continue;
            };
            if !self.in_progress.insert(d) {
                // A cycle through this definition: a loop-carried value.
                self.self_ref = true;
                loop_carried = true;
                continue;
            }
            let was = self.self_ref;
            self.self_ref = false;
            let form = self.form(ExprId(v));
            let used_self = self.self_ref;
            self.self_ref = was || used_self;
            self.in_progress.remove(&d);
            if used_self {
                // `i = i + step`: the recursion saw `i` as the join of its
                // other definitions; the step is thread-invariant exactly
                // when this definition's coefficients equal theirs.
                loop_carried = true;
                carried.push(form);
                continue;
            }
            acc = Some(match acc {
                None => form,
                Some(a) => a.join(&form),
            });
        }
        if let Some(a) = &acc
            && carried.iter().any(|c| c.coef != a.coef)
        {
            return Affine::unknown();
        }
        if acc.is_none() && carried.iter().any(|c| !c.is_invariant()) {
            return Affine::unknown();
        }
        match acc {
            Some(mut a) => {
                if loop_carried {
                    a.offset = None;
                    a.rest_multiple = 1;
                }
                a
            }
            None => Affine::invariant(1),
        }
    }
}

fn dim(d: Dim) -> usize {
    match d {
        Dim::X => 0,
        Dim::Y => 1,
        Dim::Z => 2,
    }
}
