//! Affine forms of index expressions in the thread indices:
//! `Σ c_d · threadIdx.d + (c0 + Σ m_i · u_i)` where each `c_d` is an integer,
//! a symbolic thread-invariant value, or unknown, and the rest is a constant
//! plus thread-invariant terms whose multipliers give its alignment.
//!
//! This module is the abstract domain: the forms, the arithmetic on them
//! and the lattice join. Propagating forms through assignments, merges,
//! loops and calls is the Datalog program of [`super::stride`].

use crate::ir::Dim;

/// A coefficient of a thread index.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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
    /// For a thread-invariant form: the finite set of values it can take,
    /// when known (a loop variable `s = 1, 2, 4, …` with constant bounds).
    pub values: Option<Vec<i64>>,
    /// For each symbolic coefficient: the finite set of integer values it
    /// can take, when known (`2 * s * tid` with `s = 1, 2, 4, …`).
    pub coef_values: [Option<Vec<i64>>; 3],
}

/// Most values a finite value set keeps before it is dropped.
pub const MAX_VALUES: usize = 64;

fn value_set(mut v: Vec<i64>) -> Option<Vec<i64>> {
    v.sort_unstable();
    v.dedup();
    (v.len() <= MAX_VALUES).then_some(v)
}

fn map_values(v: &Option<Vec<i64>>, f: impl Fn(i64) -> Option<i64>) -> Option<Vec<i64>> {
    let v = v.as_ref()?;
    let mapped: Option<Vec<i64>> = v.iter().map(|x| f(*x)).collect();
    value_set(mapped?)
}

impl Affine {
    fn constant(v: i64) -> Affine {
        Affine {
            coef: [Coef::Int(0), Coef::Int(0), Coef::Int(0)],
            offset: Some(v),
            rest_multiple: 0,
            grid_offset: false,
            values: Some(vec![v]),
            coef_values: [None, None, None],
        }
    }
    fn invariant(multiple: u64) -> Affine {
        Affine {
            coef: [Coef::Int(0), Coef::Int(0), Coef::Int(0)],
            offset: Some(0),
            rest_multiple: multiple,
            grid_offset: false,
            values: None,
            coef_values: [None, None, None],
        }
    }
    fn unknown() -> Affine {
        Affine {
            coef: [Coef::Unknown, Coef::Unknown, Coef::Unknown],
            offset: None,
            rest_multiple: 1,
            grid_offset: false,
            values: None,
            coef_values: [None, None, None],
        }
    }
    /// A thread-invariant form taking one of `values` (a loop variable with
    /// constant bounds); `None` when the set is empty or too large.
    pub fn with_values(values: Vec<i64>) -> Option<Affine> {
        let v = value_set(values)?;
        if v.is_empty() {
            return None;
        }
        if v.len() == 1 {
            return Some(Affine::constant(v[0]));
        }
        let g = v.iter().fold(0u64, |g, x| gcd(g, x.unsigned_abs()));
        Some(Affine {
            values: Some(v),
            ..Affine::invariant(g.max(1))
        })
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
        let values = match (&self.values, &o.values) {
            (Some(a), Some(b)) if a.len() == 1 => {
                map_values(&Some(b.clone()), |x| x.checked_add(a[0]))
            }
            (Some(a), Some(b)) if b.len() == 1 => {
                map_values(&Some(a.clone()), |x| x.checked_add(b[0]))
            }
            _ => None,
        };
        // A symbolic coefficient plus an integer one keeps its value set shifted.
        let coef_values = std::array::from_fn(|i| match (&self.coef[i], &o.coef[i]) {
            (Coef::Sym(_), Coef::Int(k)) => map_values(&self.coef_values[i], |x| x.checked_add(*k)),
            (Coef::Int(k), Coef::Sym(_)) => map_values(&o.coef_values[i], |x| x.checked_add(*k)),
            _ => None,
        });
        Affine {
            coef: std::array::from_fn(|i| self.coef[i].add(&o.coef[i])),
            offset: self
                .offset
                .zip(o.offset)
                .and_then(|(a, b)| a.checked_add(b)),
            rest_multiple: gcd(self.rest_multiple, o.rest_multiple),
            grid_offset: self.grid_offset || o.grid_offset,
            values: if self.is_invariant() && o.is_invariant() {
                values
            } else {
                None
            },
            coef_values,
        }
    }
    fn neg(&self) -> Affine {
        self.scale(&Scale::Int(-1), None)
    }
    fn scale(&self, k: &Scale, k_multiple: Option<u64>) -> Affine {
        self.scale_with(k, k_multiple, None)
    }
    /// `self · k`, where a symbolic `k` may have a known set of values.
    fn scale_with(
        &self,
        k: &Scale,
        k_multiple: Option<u64>,
        k_values: Option<&Vec<i64>>,
    ) -> Affine {
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
        let coef_values = std::array::from_fn(|i| match (&self.coef[i], k) {
            (Coef::Int(0), _) => None,
            (Coef::Int(c), Scale::Sym(_)) => {
                k_values.and_then(|v| map_values(&Some(v.clone()), |x| x.checked_mul(*c)))
            }
            (Coef::Sym(_), Scale::Int(v)) => {
                map_values(&self.coef_values[i], |x| x.checked_mul(*v))
            }
            (Coef::Sym(_), Scale::Sym(_)) => match (&self.coef_values[i], k_values) {
                (Some(a), Some(b)) => value_set(
                    a.iter()
                        .flat_map(|x| b.iter().map(move |y| x.checked_mul(*y)))
                        .collect::<Option<Vec<i64>>>()
                        .unwrap_or_default(),
                )
                .filter(|v| !v.is_empty()),
                _ => None,
            },
            _ => None,
        });
        let values = match k {
            Scale::Int(v) if self.is_invariant() => map_values(&self.values, |x| x.checked_mul(*v)),
            _ => None,
        };
        Affine {
            coef: std::array::from_fn(|i| self.coef[i].scale(k)),
            offset: match k {
                Scale::Int(_) => offset_const,
                _ => Some(0),
            },
            rest_multiple,
            grid_offset: self.grid_offset,
            values,
            coef_values,
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

    /// A form counting units of `from` bytes, re-expressed in units of `to`
    /// bytes; `None` when neither unit divides the other. Coefficients or
    /// offsets that are not whole units of `to` become unknown.
    pub fn rescale(&self, from: u64, to: u64) -> Option<Affine> {
        if from == to || from == 0 || to == 0 {
            return Some(self.clone());
        }
        if from.is_multiple_of(to) {
            return Some(self.times((from / to) as i64));
        }
        if !to.is_multiple_of(from) {
            return None;
        }
        let r = (to / from) as i64;
        Some(Affine {
            coef: std::array::from_fn(|i| match &self.coef[i] {
                Coef::Int(c) if c % r == 0 => Coef::Int(c / r),
                Coef::Int(_) | Coef::Unknown => Coef::Unknown,
                Coef::Sym(s) => Coef::Sym(format!("({s})/{r}")),
            }),
            offset: self.offset.filter(|o| o % r == 0).map(|o| o / r),
            rest_multiple: match self.rest_multiple {
                0 => 0,
                m if m % r as u64 == 0 => m / r as u64,
                _ => 1,
            },
            grid_offset: self.grid_offset,
            values: if self.is_invariant() {
                self.values
                    .as_ref()
                    .filter(|v| v.iter().all(|x| x % r == 0))
                    .and_then(|v| value_set(v.iter().map(|x| x / r).collect()))
            } else {
                None
            },
            coef_values: std::array::from_fn(|i| {
                let v = self.coef_values[i].as_ref()?;
                if v.iter().all(|x| x % r == 0) {
                    value_set(v.iter().map(|x| x / r).collect())
                } else {
                    None
                }
            }),
        })
    }

    /// `self + o`.
    pub fn add_form(&self, o: &Affine) -> Affine {
        self.add(o)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Operators of the stride program's `Op1`/`Op2` relations.
pub(crate) mod op {
    /// `-a`
    pub const NEG: u8 = 0;
    /// `a + 1` (`++`)
    pub const INC: u8 = 1;
    /// `a - 1` (`--`)
    pub const DEC: u8 = 2;
    /// `a + b`
    pub const ADD: u8 = 10;
    /// `a - b`
    pub const SUB: u8 = 11;
    /// `a * b`, `__mul24(a, b)`
    pub const MUL: u8 = 12;
    /// `a << b`
    pub const SHL: u8 = 13;
    /// `a / b`
    pub const DIV: u8 = 14;
    /// `a % b`
    pub const REM: u8 = 15;
    /// `a >> b`
    pub const SHR: u8 = 16;
}

/// The form of an expression the stride program cannot see into: a
/// thread-invariant unknown when the expression is uniform, else unknown.
pub(crate) fn opaque(uniform: bool) -> Affine {
    if uniform {
        Affine::invariant(1)
    } else {
        Affine::unknown()
    }
}

/// `Affine` of a leaf: a constant.
pub(crate) fn constant(v: i64) -> Affine {
    Affine::constant(v)
}

/// `Affine` of `threadIdx.d`.
pub(crate) fn thread_index(d: Dim) -> Affine {
    Affine::thread(dim(d))
}

/// `Affine` of `blockIdx.d`: invariant, and marks a grid-wide index.
pub(crate) fn block_index() -> Affine {
    Affine {
        grid_offset: true,
        ..Affine::invariant(1)
    }
}

/// A thread-invariant value about which nothing else is known.
pub(crate) fn invariant() -> Affine {
    Affine::invariant(1)
}

/// The unary operators: negation, `++`, `--`.
pub(crate) fn unary(op: u8, x: &Affine) -> Affine {
    match op {
        op::NEG => x.neg(),
        op::INC => x.add(&Affine::constant(1)),
        op::DEC => x.add(&Affine::constant(-1)),
        _ => Affine::unknown(),
    }
}

/// The binary operators. `text_a`/`text_b` name the operands (a symbolic
/// multiplier is named by its text); `uniform` is whether the whole
/// expression is thread-invariant (for results that are not affine);
/// `warp_aligned` whether blockDim.x is a known multiple of 32.
#[allow(clippy::too_many_arguments)]
pub(crate) fn binary(
    op: u8,
    x: &Affine,
    y: &Affine,
    text_a: Option<&str>,
    text_b: Option<&str>,
    uniform: bool,
    warp_aligned: bool,
) -> Affine {
    match op {
        op::ADD => x.add(y),
        op::SUB => x.add(&y.neg()),
        op::MUL => mul(x, y, text_a, text_b),
        op::SHL => match shift_amount(y) {
            Some(s) => x.scale(&Scale::Int(1 << s), None),
            None => opaque(uniform),
        },
        op::DIV | op::REM | op::SHR => {
            let divisor = if op == op::SHR {
                shift_amount(y).map(|s| 1i64 << s)
            } else {
                match y.offset {
                    Some(v) if y.is_invariant() && y.rest_multiple == 0 && v > 0 => Some(v),
                    _ => None,
                }
            };
            if x.is_invariant() {
                if !y.is_invariant() {
                    // `c / t`: not affine in the thread index.
                    return opaque(uniform);
                }
                return match (x.offset, x.rest_multiple, divisor) {
                    (Some(o), 0, Some(d)) if op == op::SHR => Affine::constant(o.div_euclid(d)),
                    (Some(o), 0, Some(d)) if op != op::REM => Affine::constant(o / d),
                    (Some(o), 0, Some(d)) => Affine::constant(o % d),
                    (_, _, Some(d)) if x.values.is_some() => {
                        let f = |v: i64| match op {
                            op::SHR => Some(v.div_euclid(d)),
                            op::REM => v.checked_rem(d),
                            _ => v.checked_div(d),
                        };
                        map_values(&x.values, f)
                            .and_then(Affine::with_values)
                            .unwrap_or_else(|| Affine::invariant(1))
                    }
                    _ => Affine::invariant(1),
                };
            }
            // Within a warp whose lanes differ only in threadIdx.x by less
            // than 32: `x / (32·m)` is constant, `x % (32·m)` is `x` up to
            // a constant.
            // The lanes' values must also stay inside one aligned run of 32:
            // `threadIdx.x + c` with `c` a multiple of 32 (and any invariant
            // rest a multiple of 32), else `(threadIdx.x + 5) / 32` splits
            // the warp.
            let lane_linear = warp_aligned
                && x.coef[0] == Coef::Int(1)
                && x.coef[1].is_zero()
                && x.coef[2].is_zero()
                && x.offset.is_some_and(|o| o % 32 == 0)
                && x.rest_multiple.is_multiple_of(32);
            match divisor {
                Some(d) if lane_linear && d % 32 == 0 => {
                    if op == op::REM {
                        Affine {
                            offset: None,
                            rest_multiple: 1,
                            ..x.clone()
                        }
                    } else {
                        Affine::invariant(1)
                    }
                }
                _ => opaque(uniform),
            }
        }
        _ => opaque(uniform),
    }
}

/// A constant shift amount in `0..32`.
fn shift_amount(k: &Affine) -> Option<i64> {
    match k.offset {
        Some(s) if k.is_invariant() && k.rest_multiple == 0 && (0..32).contains(&s) => Some(s),
        _ => None,
    }
}

/// The multiplier an invariant operand stands for.
fn scale_of(a: &Affine, text: Option<&str>) -> (Scale, Option<u64>) {
    if !a.is_invariant() {
        return (Scale::Unknown, None);
    }
    match (a.offset, a.rest_multiple) {
        (Some(v), 0) => (Scale::Int(v), None),
        _ if a.values.as_ref().is_some_and(|v| v.len() == 1) => {
            (Scale::Int(a.values.as_ref().map_or(0, |v| v[0])), None)
        }
        _ => {
            let mult = match (a.offset, a.rest_multiple) {
                (Some(o), m) => gcd(o.unsigned_abs(), m),
                _ => 1,
            };
            match text {
                Some(t) => (Scale::Sym(t.to_string()), Some(mult.max(1))),
                None => (Scale::Unknown, None),
            }
        }
    }
}

fn mul(x: &Affine, y: &Affine, text_a: Option<&str>, text_b: Option<&str>) -> Affine {
    let grid = x.grid_offset || y.grid_offset;
    let mut out = if y.is_invariant() {
        let (k, m) = scale_of(y, text_b);
        let mut r = x.scale_with(&k, m, y.values.as_ref());
        if x.is_invariant() {
            r.values = products(&x.values, &y.values);
        }
        r
    } else if x.is_invariant() {
        let (k, m) = scale_of(x, text_a);
        y.scale_with(&k, m, x.values.as_ref())
    } else {
        Affine::unknown()
    };
    out.grid_offset = grid && out.coef.iter().all(|c| *c != Coef::Unknown);
    out
}

/// The value of a loop-carried variable at the loop head, from one value it
/// enters with: the same thread coefficients (the stride program checks
/// that every back-edge value keeps them), any thread-invariant offset.
pub(crate) fn widen(x: &Affine) -> Affine {
    Affine {
        offset: None,
        rest_multiple: 1,
        values: None,
        ..x.clone()
    }
}

fn products(a: &Option<Vec<i64>>, b: &Option<Vec<i64>>) -> Option<Vec<i64>> {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    let v: Option<Vec<i64>> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| x.checked_mul(*y)))
        .collect();
    value_set(v?)
}

fn union(a: &Option<Vec<i64>>, b: &Option<Vec<i64>>) -> Option<Vec<i64>> {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    value_set(a.iter().chain(b.iter()).copied().collect())
}

impl Affine {
    /// The least upper bound: equal parts kept, differing parts unknown.
    pub fn join(&self, o: &Affine) -> Affine {
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
            values: union(&self.values, &o.values),
            coef_values: std::array::from_fn(|i| {
                if self.coef[i] == o.coef[i] {
                    union(&self.coef_values[i], &o.coef_values[i])
                } else {
                    None
                }
            }),
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
