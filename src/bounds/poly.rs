//! Uniform symbolic values: integer polynomials over atoms (kernel
//! parameters, launch dimensions, block indices, the uniform integer
//! variables of the cost program, and derived invariant values such as
//! `floor(n / 2)`), used linearly for loop guards and potentials and
//! exactly for alignments.

use super::expr::Bx;
use std::collections::BTreeMap;

/// Index into an [`Atoms`] table.
pub type AtomId = u32;

/// What an atom stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AtomKind {
    /// A scalar kernel parameter (by name).
    Param(String),
    /// A template parameter whose value no launch site fixes.
    TParam(String),
    /// `blockDim.d` (unknown block).
    BlockDim(usize),
    /// `gridDim.d`.
    GridDim(usize),
    /// `blockIdx.d`: in `0..gridDim.d`.
    BlockIdx(usize),
    /// The first `threadIdx.d` of a warp when the block is unknown: in
    /// `0..=blockDim.d - 1`.
    WarpBase(usize),
    /// A uniform integer local variable of the cost program.
    Var(u32),
    /// An invariant value with a meaning (`floor(n / 2)`, an alignment
    /// indicator): non-negative when `nonneg`.
    Derived {
        /// Its value.
        expr: Bx,
        /// Whether it is known to be non-negative.
        nonneg: bool,
    },
    /// A uniform value that no bound may mention (loaded from memory, a
    /// call's result), described.
    Opaque(String),
}

/// The atoms of one kernel's analysis.
#[derive(Clone, Debug, Default)]
pub struct Atoms {
    kinds: Vec<AtomKind>,
    ids: std::collections::HashMap<AtomKind, AtomId>,
}

impl Atoms {
    /// Intern an atom.
    pub fn intern(&mut self, k: AtomKind) -> AtomId {
        if let Some(id) = self.ids.get(&k) {
            return *id;
        }
        let id = self.kinds.len() as AtomId;
        self.kinds.push(k.clone());
        self.ids.insert(k, id);
        id
    }
    /// The id of an atom already interned.
    pub fn get(&self, k: &AtomKind) -> Option<AtomId> {
        self.ids.get(k).copied()
    }
    /// The kind of atom `id`.
    pub fn kind(&self, id: AtomId) -> &AtomKind {
        &self.kinds[id as usize]
    }
    /// The atom as a bound expression, when a bound may mention it.
    pub fn to_bx(&self, id: AtomId) -> Option<Bx> {
        const D: [&str; 3] = ["x", "y", "z"];
        Some(match self.kind(id) {
            AtomKind::Param(n) | AtomKind::TParam(n) => Bx::Name(n.clone()),
            AtomKind::BlockDim(d) => Bx::Name(format!("blockDim.{}", D[*d])),
            AtomKind::GridDim(d) => Bx::Name(format!("gridDim.{}", D[*d])),
            AtomKind::Derived { expr, .. } => expr.clone(),
            AtomKind::BlockIdx(_)
            | AtomKind::WarpBase(_)
            | AtomKind::Var(_)
            | AtomKind::Opaque(_) => return None,
        })
    }
    /// Whether the atom's value is known to be non-negative.
    pub fn nonneg(&self, id: AtomId) -> bool {
        matches!(
            self.kind(id),
            AtomKind::BlockDim(_)
                | AtomKind::GridDim(_)
                | AtomKind::BlockIdx(_)
                | AtomKind::WarpBase(_)
                | AtomKind::Derived { nonneg: true, .. }
        )
    }
    /// A readable name for messages.
    pub fn describe(&self, id: AtomId) -> String {
        const D: [&str; 3] = ["x", "y", "z"];
        match self.kind(id) {
            AtomKind::BlockIdx(d) => format!("blockIdx.{}", D[*d]),
            AtomKind::WarpBase(d) => format!("threadIdx.{} (warp start)", D[*d]),
            AtomKind::Var(v) => format!("v{v}"),
            AtomKind::Opaque(s) => s.clone(),
            _ => self.to_bx(id).map(|b| b.to_string()).unwrap_or_default(),
        }
    }
}

/// A monomial: sorted atom ids (empty: the constant 1).
pub type Mono = Vec<AtomId>;

/// An integer polynomial over atoms.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Poly {
    /// Non-zero coefficients by monomial.
    pub terms: BTreeMap<Mono, i64>,
}

impl Poly {
    /// The constant `c`.
    pub fn constant(c: i64) -> Poly {
        let mut p = Poly::default();
        if c != 0 {
            p.terms.insert(Vec::new(), c);
        }
        p
    }
    /// The atom `a`.
    pub fn atom(a: AtomId) -> Poly {
        let mut p = Poly::default();
        p.terms.insert(vec![a], 1);
        p
    }
    /// The constant value, if the polynomial is one.
    pub fn as_const(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }
    /// The constant term.
    pub fn const_term(&self) -> i64 {
        self.terms.get(&Vec::new()).copied().unwrap_or(0)
    }
    /// `self + o` (`None` on overflow).
    pub fn add(&self, o: &Poly) -> Option<Poly> {
        let mut out = self.clone();
        for (m, c) in &o.terms {
            let e = out.terms.entry(m.clone()).or_insert(0);
            *e = e.checked_add(*c)?;
            if *e == 0 {
                out.terms.remove(m);
            }
        }
        Some(out)
    }
    /// `self - o`.
    pub fn sub(&self, o: &Poly) -> Option<Poly> {
        self.add(&o.scale(-1)?)
    }
    /// `self · k`.
    pub fn scale(&self, k: i64) -> Option<Poly> {
        if k == 0 {
            return Some(Poly::default());
        }
        let mut out = Poly::default();
        for (m, c) in &self.terms {
            out.terms.insert(m.clone(), c.checked_mul(k)?);
        }
        Some(out)
    }
    /// `self · o`.
    pub fn mul(&self, o: &Poly) -> Option<Poly> {
        let mut out = Poly::default();
        for (m1, c1) in &self.terms {
            for (m2, c2) in &o.terms {
                let mut m = m1.clone();
                m.extend(m2.iter().copied());
                m.sort_unstable();
                if m.len() > 6 {
                    return None;
                }
                let e = out.terms.entry(m.clone()).or_insert(0);
                *e = e.checked_add(c1.checked_mul(*c2)?)?;
                if *e == 0 {
                    out.terms.remove(&m);
                }
            }
        }
        Some(out)
    }
    /// `self / k` when every coefficient is a multiple of `k`.
    pub fn div_exact(&self, k: i64) -> Option<Poly> {
        if k == 0 || self.terms.values().any(|c| c % k != 0) {
            return None;
        }
        let mut out = Poly::default();
        for (m, c) in &self.terms {
            out.terms.insert(m.clone(), c / k);
        }
        Some(out)
    }
    /// Every atom mentioned.
    pub fn atoms(&self) -> Vec<AtomId> {
        let mut v: Vec<AtomId> = self.terms.keys().flatten().copied().collect();
        v.sort_unstable();
        v.dedup();
        v
    }
    /// Whether atom `a` occurs.
    pub fn mentions(&self, a: AtomId) -> bool {
        self.terms.keys().any(|m| m.contains(&a))
    }
    /// The coefficient of `a` when `a` occurs only linearly (`Some(0)` when
    /// absent, `None` when it occurs in a product).
    pub fn linear_coef(&self, a: AtomId) -> Option<i64> {
        let mut c = 0;
        for (m, k) in &self.terms {
            if m.contains(&a) {
                if m.len() != 1 {
                    return None;
                }
                c = *k;
            }
        }
        Some(c)
    }
    /// Substitute `p` for atom `a`.
    pub fn substitute(&self, a: AtomId, p: &Poly) -> Option<Poly> {
        if !self.mentions(a) {
            return Some(self.clone());
        }
        let mut out = Poly::default();
        for (m, c) in &self.terms {
            let n = m.iter().filter(|x| **x == a).count();
            let rest: Mono = m.iter().copied().filter(|x| *x != a).collect();
            let mut term = Poly::default();
            term.terms.insert(rest, *c);
            for _ in 0..n {
                term = term.mul(p)?;
            }
            out = out.add(&term)?;
        }
        Some(out)
    }
    /// As a bound expression; `None` when an atom may not appear in one.
    pub fn to_bx(&self, atoms: &Atoms) -> Option<Bx> {
        let mut parts = Vec::new();
        for (m, c) in &self.terms {
            let mut f = vec![Bx::Int(*c)];
            for a in m {
                f.push(atoms.to_bx(*a)?);
            }
            parts.push(Bx::Mul(f).simplify());
        }
        Some(Bx::Add(parts).simplify())
    }
    /// Evaluate with values for atoms.
    pub fn eval(&self, val: &dyn Fn(AtomId) -> Option<f64>) -> Option<f64> {
        let mut s = 0.0;
        for (m, c) in &self.terms {
            let mut t = *c as f64;
            for a in m {
                t *= val(*a)?;
            }
            s += t;
        }
        Some(s)
    }
}
