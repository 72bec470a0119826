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

/// Parse like [`parse`], giving up (`None`) when parsing takes longer than
/// `budget`: tree-sitter's error recovery can be slow on hostile input.
pub fn parse_with_budget(text: &str, budget: std::time::Duration) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let parser = slot.get_or_insert_with(|| {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_cuda::LANGUAGE.into())
                .expect("tree-sitter-cuda grammar is compatible with the linked tree-sitter");
            p
        });
        let deadline = std::time::Instant::now() + budget;
        let bytes = text.as_bytes();
        let mut progress = |_: &tree_sitter::ParseState| {
            if std::time::Instant::now() > deadline {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        };
        let tree = parser.parse_with_options(
            &mut |at: usize, _| &bytes[at.min(bytes.len())..],
            None,
            Some(tree_sitter::ParseOptions::new().progress_callback(&mut progress)),
        );
        if tree.is_none() {
            // A cancelled parse must not be resumed by the next one.
            parser.reset();
        }
        tree
    })
}

/// The source text of a node (lossy for invalid UTF-8, which cannot occur
/// because inputs are decoded to `str` first).
pub fn text<'s>(node: Node<'_>, src: &'s [u8]) -> &'s str {
    std::str::from_utf8(&src[node.byte_range()]).unwrap_or("")
}

/// Named children of a node, comments left out.
pub fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut c = node.walk();
    // (session 14, binaryPartitionCG's `else // Even numbers group`) A
    // comment is an extra node that can sit anywhere, even between `else`
    // and its statement: positional readers must never see one.
    node.named_children(&mut c)
        .filter(|n| n.kind() != "comment")
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_parse_past_its_budget_gives_up_and_the_parser_recovers() {
        let big = "int x = ;\n// c\n".repeat(200_000);
        assert!(parse_with_budget(&big, Duration::ZERO).is_none());
        let t = parse_with_budget("int y;\n", Duration::from_secs(5)).expect("parsed");
        assert!(!t.root_node().has_error());
        assert_eq!(parse("int z;\n").root_node().child_count(), 1);
    }
}
