//! Values of the symbolic warp execution: per-lane integers as a uniform
//! polynomial plus per-lane offsets (concrete when the lanes' thread
//! indices are), pointers into arrays, and unknowns (uniform or not, from
//! memory or not).

use super::poly::Poly;
use crate::ir::VarId;
use std::rc::Rc;

/// Per-lane offsets of an integer value.
#[derive(Clone, Debug, PartialEq)]
pub enum Offs {
    /// The same value in every lane.
    Zero,
    /// Concrete offsets per lane.
    Con(Rc<Vec<i64>>),
    /// Symbolic offsets per lane (a stride with a symbolic factor).
    Sym(Rc<Vec<Poly>>),
}

/// An integer value: lane `l` holds `base + off[l]`.
#[derive(Clone, Debug, PartialEq)]
pub struct IntVal {
    /// The uniform part.
    pub base: Poly,
    /// The per-lane part.
    pub offs: Offs,
}

/// The array a pointer points into.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Root {
    /// A parameter or a declared (shared, local) array.
    Var(VarId),
    /// A global by name.
    Name(String),
}

/// A value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// An integer.
    Int(IntVal),
    /// A pointer: array and byte offset.
    Ptr(Root, IntVal),
    /// Not tracked.
    Unknown {
        /// Same in every lane.
        uniform: bool,
        /// Loaded from memory (a data-dependent value).
        memory: bool,
    },
}

impl Val {
    /// An unknown value.
    pub fn unknown(uniform: bool, memory: bool) -> Val {
        Val::Unknown { uniform, memory }
    }
    /// The integer constant `c`.
    pub fn int(c: i64) -> Val {
        Val::Int(IntVal::constant(c))
    }
    /// Whether every lane holds the same value.
    pub fn is_uniform(&self) -> bool {
        match self {
            Val::Int(i) | Val::Ptr(_, i) => i.is_uniform(),
            Val::Unknown { uniform, .. } => *uniform,
        }
    }
    /// Whether the value was loaded from memory.
    pub fn from_memory(&self) -> bool {
        matches!(self, Val::Unknown { memory: true, .. })
    }
    /// The integer, if it is one.
    pub fn as_int(&self) -> Option<&IntVal> {
        match self {
            Val::Int(i) => Some(i),
            _ => None,
        }
    }
}

impl IntVal {
    /// A uniform value.
    pub fn uniform(p: Poly) -> IntVal {
        IntVal {
            base: p,
            offs: Offs::Zero,
        }
    }
    /// A uniform constant.
    pub fn constant(c: i64) -> IntVal {
        IntVal::uniform(Poly::constant(c))
    }
    /// Concrete per-lane values.
    pub fn lanes(v: Vec<i64>) -> IntVal {
        IntVal {
            base: Poly::default(),
            offs: Offs::Con(Rc::new(v)),
        }
        .normalized()
    }
    /// Whether all lanes agree.
    pub fn is_uniform(&self) -> bool {
        match &self.offs {
            Offs::Zero => true,
            Offs::Con(v) => v.iter().all(|x| *x == v[0]),
            Offs::Sym(v) => v.iter().all(|x| *x == v[0]),
        }
    }
    /// The constant value, when uniform and constant.
    pub fn as_const(&self) -> Option<i64> {
        if !self.is_uniform() {
            return None;
        }
        let o = match &self.offs {
            Offs::Zero => 0,
            Offs::Con(v) => *v.first()?,
            Offs::Sym(v) => v.first()?.as_const()?,
        };
        self.base.as_const()?.checked_add(o)
    }
    /// Concrete per-lane values when the base is a constant.
    pub fn concrete(&self, n: usize) -> Option<Vec<i64>> {
        let b = self.base.as_const()?;
        match &self.offs {
            Offs::Zero => Some(vec![b; n]),
            Offs::Con(v) => v.iter().map(|x| x.checked_add(b)).collect(),
            Offs::Sym(v) => v
                .iter()
                .map(|p| p.as_const().and_then(|x| x.checked_add(b)))
                .collect(),
        }
    }
    /// The polynomial of lane `l`.
    pub fn lane(&self, l: usize) -> Option<Poly> {
        match &self.offs {
            Offs::Zero => Some(self.base.clone()),
            Offs::Con(v) => self.base.add(&Poly::constant(*v.get(l)?)),
            Offs::Sym(v) => self.base.add(v.get(l)?),
        }
    }
    /// Move uniform parts of the offsets into the base; concrete offsets
    /// where they are constants.
    pub fn normalized(self) -> IntVal {
        match self.offs {
            Offs::Con(v) => {
                if v.is_empty() || v.iter().all(|x| *x == 0) {
                    return IntVal::uniform(self.base);
                }
                if v.iter().all(|x| *x == v[0]) {
                    return match self.base.add(&Poly::constant(v[0])) {
                        Some(b) => IntVal::uniform(b),
                        None => IntVal {
                            base: self.base,
                            offs: Offs::Con(v),
                        },
                    };
                }
                IntVal {
                    base: self.base,
                    offs: Offs::Con(v),
                }
            }
            Offs::Sym(v) => {
                if v.is_empty() {
                    return IntVal::uniform(self.base);
                }
                let first = v[0].clone();
                let diffs: Option<Vec<Poly>> = v.iter().map(|p| p.sub(&first)).collect();
                let (Some(base), Some(diffs)) = (self.base.add(&first), diffs) else {
                    return IntVal {
                        base: self.base,
                        offs: Offs::Sym(v),
                    };
                };
                let cons: Option<Vec<i64>> = diffs.iter().map(Poly::as_const).collect();
                match cons {
                    Some(c) => IntVal {
                        base,
                        offs: Offs::Con(Rc::new(c)),
                    }
                    .normalized(),
                    None => IntVal {
                        base,
                        offs: Offs::Sym(Rc::new(diffs)),
                    },
                }
            }
            Offs::Zero => self,
        }
    }
    /// Per-lane polynomials for `n` lanes.
    fn per_lane(&self, n: usize) -> Option<Vec<Poly>> {
        (0..n).map(|l| self.lane(l)).collect()
    }
    /// `self + o`.
    pub fn add(&self, o: &IntVal, n: usize) -> Option<IntVal> {
        let base = self.base.add(&o.base)?;
        let offs = match (&self.offs, &o.offs) {
            (Offs::Zero, x) | (x, Offs::Zero) => x.clone(),
            (Offs::Con(a), Offs::Con(b)) => Offs::Con(Rc::new(
                a.iter()
                    .zip(b.iter())
                    .map(|(x, y)| x.checked_add(*y))
                    .collect::<Option<Vec<i64>>>()?,
            )),
            _ => {
                let (a, b) = (self.offs_poly(n)?, o.offs_poly(n)?);
                Offs::Sym(Rc::new(
                    a.iter()
                        .zip(b.iter())
                        .map(|(x, y)| x.add(y))
                        .collect::<Option<Vec<Poly>>>()?,
                ))
            }
        };
        Some(IntVal { base, offs }.normalized())
    }
    fn offs_poly(&self, n: usize) -> Option<Vec<Poly>> {
        Some(match &self.offs {
            Offs::Zero => vec![Poly::default(); n],
            Offs::Con(v) => v.iter().map(|x| Poly::constant(*x)).collect(),
            Offs::Sym(v) => v.to_vec(),
        })
    }
    /// `self · k` for a constant.
    pub fn scale(&self, k: i64) -> Option<IntVal> {
        Some(
            IntVal {
                base: self.base.scale(k)?,
                offs: match &self.offs {
                    Offs::Zero => Offs::Zero,
                    Offs::Con(v) => Offs::Con(Rc::new(
                        v.iter()
                            .map(|x| x.checked_mul(k))
                            .collect::<Option<Vec<i64>>>()?,
                    )),
                    Offs::Sym(v) => Offs::Sym(Rc::new(
                        v.iter()
                            .map(|x| x.scale(k))
                            .collect::<Option<Vec<Poly>>>()?,
                    )),
                },
            }
            .normalized(),
        )
    }
    /// `self - o`.
    pub fn sub(&self, o: &IntVal, n: usize) -> Option<IntVal> {
        self.add(&o.scale(-1)?, n)
    }
    /// `self · o`.
    pub fn mul(&self, o: &IntVal, n: usize) -> Option<IntVal> {
        if let Some(k) = o.as_const() {
            return self.scale(k);
        }
        if let Some(k) = self.as_const() {
            return o.scale(k);
        }
        if o.is_uniform() && matches!(o.offs, Offs::Zero) {
            let base = self.base.mul(&o.base)?;
            let offs = match &self.offs {
                Offs::Zero => Offs::Zero,
                _ => Offs::Sym(Rc::new(
                    self.offs_poly(n)?
                        .iter()
                        .map(|x| x.mul(&o.base))
                        .collect::<Option<Vec<Poly>>>()?,
                )),
            };
            return Some(IntVal { base, offs }.normalized());
        }
        if self.is_uniform() && matches!(self.offs, Offs::Zero) {
            return o.mul(self, n);
        }
        let (a, b) = (self.per_lane(n)?, o.per_lane(n)?);
        let v: Option<Vec<Poly>> = a.iter().zip(b.iter()).map(|(x, y)| x.mul(y)).collect();
        Some(
            IntVal {
                base: Poly::default(),
                offs: Offs::Sym(Rc::new(v?)),
            }
            .normalized(),
        )
    }
}
