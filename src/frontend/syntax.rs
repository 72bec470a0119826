//! Thin helpers over tree-sitter-cuda.

use std::cell::RefCell;
use tree_sitter::{Node, Parser, Tree};

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parse CUDA C++ source text. Never fails: tree-sitter always returns a tree,
/// with ERROR/MISSING nodes where the text does not fit the grammar.
pub fn parse(text: &str) -> Tree {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let parser = slot.get_or_insert_with(|| {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_cuda::LANGUAGE.into())
                .expect("tree-sitter-cuda grammar is compatible with the linked tree-sitter");
            p
        });
        match parser.parse(text, None) {
            Some(t) => t,
            None => {
                // Only possible after a cancellation or timeout, neither of
                // which we set; reset and retry once.
                parser.reset();
                parser
                    .parse(text, None)
                    .expect("tree-sitter parse without timeout returns a tree")
            }
        }
    })
}

/// The source text of a node (lossy for invalid UTF-8, which cannot occur
/// because inputs are decoded to `str` first).
pub fn text<'s>(node: Node<'_>, src: &'s [u8]) -> &'s str {
    std::str::from_utf8(&src[node.byte_range()]).unwrap_or("")
}

/// Named children of a node.
pub fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut c = node.walk();
    node.named_children(&mut c).collect()
}

/// All children (named and anonymous) of a node.
pub fn children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut c = node.walk();
    node.children(&mut c).collect()
}

/// First child with the given field name.
pub fn field<'t>(node: Node<'t>, name: &str) -> Option<Node<'t>> {
    node.child_by_field_name(name)
}

/// The first ERROR or MISSING node in pre-order below `node` (inclusive).
pub fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    let mut out = Vec::new();
    errors_limited(node, &mut out, 1);
    out.pop()
}

/// Every ERROR or MISSING node below `node` (outermost only), in pre-order.
/// Iterative: syntax trees of pathological input can be very deep.
pub fn errors<'t>(node: Node<'t>, out: &mut Vec<Node<'t>>) {
    errors_limited(node, out, usize::MAX);
}

fn errors_limited<'t>(node: Node<'t>, out: &mut Vec<Node<'t>>, limit: usize) {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if !n.has_error() {
            continue;
        }
        if n.is_error() || n.is_missing() {
            out.push(n);
            if out.len() >= limit {
                return;
            }
            continue;
        }
        let mut kids = children(n);
        kids.reverse();
        stack.extend(kids);
    }
}

/// Describe an error node for a diagnostic.
pub fn describe_error(node: Node<'_>, src: &[u8]) -> String {
    if node.is_missing() {
        format!("syntax error: missing `{}`", node.kind())
    } else {
        let t: String = text(node, src)
            .chars()
            .take(40)
            .map(|c| if c.is_whitespace() { ' ' } else { c })
            .collect();
        format!("syntax error: unexpected `{}`", t.trim())
    }
}
