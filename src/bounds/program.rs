//! Cost programs: what the symbolic warp execution ([`super::exec`])
//! leaves of a kernel for the LP stage ([`super::aara`]). A structured
//! program over the uniform integer variables that carry potential (loop
//! counters), with cost ticks (per metric, constants or invariant
//! non-negative terms such as alignment indicators), uniform choices,
//! loops with a guard (`guard ≥ 1` while the loop runs, for the worst lane)
//! and jumps.

use super::poly::{AtomId, Poly};
use crate::facts::loops::StepOp;

/// Costs of one tick, per metric ([`super::Metric::ALL`] order).
pub type Cost = [Poly; 4];

/// A cost-program statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// Pay these costs.
    Tick(Box<Cost>),
    /// `v := p` (`v` a variable atom).
    Assign(AtomId, Poly),
    /// `v := v + c`.
    Shift(AtomId, i64),
    /// `v := v op k` (multiplicative: `*`, `/`, `<<`, `>>` by a constant).
    Scale(AtomId, StepOp, i64),
    /// `v` takes an unknown value.
    Havoc(AtomId),
    /// In order.
    Seq(Vec<Node>),
    /// Exactly one of these runs (a warp-uniform decision).
    Choice(Vec<Node>),
    /// A loop.
    Loop(Box<LoopNode>),
    /// Leave the innermost loop.
    Break,
    /// Go to the innermost loop's step.
    Continue,
    /// Leave the kernel.
    Return,
}

/// A loop: `while (test) { body; step }` (`do { body; step } while (test)`
/// when `body_first`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LoopNode {
    /// The cost of one evaluation of the test.
    pub test: Cost,
    /// The loop runs only while `guard ≥ 1` (the worst lane's view).
    pub guard: Option<Poly>,
    /// Body.
    pub body: Node,
    /// Step (runs after the body and after `continue`).
    pub step: Node,
    /// `do … while`.
    pub body_first: bool,
    /// 1-based source line, for reasons.
    pub line: u32,
    /// Why the loop facts found no trip count, if they did not.
    pub reason: Option<String>,
}

impl Node {
    /// A sequence, flattened, without empty parts.
    pub fn seq(items: Vec<Node>) -> Node {
        let mut out = Vec::new();
        for n in items {
            match n {
                Node::Seq(v) => out.extend(v),
                n if n.is_empty() => {}
                n => out.push(n),
            }
        }
        if out.len() == 1 {
            out.pop().unwrap_or(Node::Seq(Vec::new()))
        } else {
            Node::Seq(out)
        }
    }

    /// Nothing at all.
    pub fn empty() -> Node {
        Node::Seq(Vec::new())
    }

    /// Whether this does nothing.
    pub fn is_empty(&self) -> bool {
        match self {
            Node::Seq(v) => v.iter().all(Node::is_empty),
            Node::Tick(c) => c.iter().all(|p| p.terms.is_empty()),
            _ => false,
        }
    }

    /// A tick of constant costs.
    pub fn tick(c: [i64; 4]) -> Node {
        Node::Tick(Box::new(c.map(Poly::constant)))
    }

    /// Whether metric `m` is charged anywhere.
    pub fn charges(&self, m: usize) -> bool {
        match self {
            Node::Tick(c) => !c[m].terms.is_empty(),
            Node::Seq(v) | Node::Choice(v) => v.iter().any(|n| n.charges(m)),
            Node::Loop(l) => !l.test[m].terms.is_empty() || l.body.charges(m) || l.step.charges(m),
            _ => false,
        }
    }

    /// Variables assigned anywhere inside.
    #[allow(clippy::collapsible_match)]
    pub fn assigned(&self, out: &mut Vec<AtomId>) {
        match self {
            Node::Assign(v, _) | Node::Shift(v, _) | Node::Scale(v, ..) | Node::Havoc(v) => {
                if !out.contains(v) {
                    out.push(*v)
                }
            }
            Node::Seq(v) | Node::Choice(v) => v.iter().for_each(|n| n.assigned(out)),
            Node::Loop(l) => {
                l.body.assigned(out);
                l.step.assigned(out);
            }
            _ => {}
        }
    }

    /// Depth of loop nesting.
    pub fn loop_depth(&self) -> usize {
        match self {
            Node::Seq(v) | Node::Choice(v) => v.iter().map(Node::loop_depth).max().unwrap_or(0),
            Node::Loop(l) => 1 + l.body.loop_depth().max(l.step.loop_depth()),
            _ => 0,
        }
    }

    /// Number of nodes (a size measure).
    pub fn size(&self) -> usize {
        match self {
            Node::Seq(v) | Node::Choice(v) => 1 + v.iter().map(Node::size).sum::<usize>(),
            Node::Loop(l) => 1 + l.body.size() + l.step.size(),
            _ => 1,
        }
    }
}
