//! issue 8, session 12 (audit 20261212 #1, #7, #28, #34): shared memory
//! reached through a `SharedMemory<T>` view, guards inside block-stride
//! loops, loops whose counter starts by assignment, and literal-only double
//! arithmetic. Fixture: tests/fixtures/findings/s12/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/s12/kernels.cu"]))
}

fn of(function: &str, rule: &str) -> Vec<&'static serde_json::Value> {
    common::rule_in(findings(), function, rule)
}

use common::message;

/// `T *sdata = SharedMemory<T>();` points into shared memory: the
/// reduction's divergent part is memory (a warning), and a column through
/// the view is a 32-way bank conflict.
#[test]
fn a_shared_memory_view_is_shared_memory() {
    let d = of("view_reduce", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "warning", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("accesses memory")
            && !message(d[0]).contains("register arithmetic only"),
        "{}",
        message(d[0])
    );
    let b = of("view_column", "shared-bank-conflict");
    assert_eq!(b.len(), 1, "{:#?}", findings());
    assert!(message(b[0]).contains("32-way"), "{}", message(b[0]));
}

/// `if (i + threadIdx.x < len)` in a loop stepping `i` by blockDim.x is a
/// note with its bound; with a per-thread step it stays a warning.
#[test]
fn a_guard_inside_a_block_stride_loop_is_one_partial_iteration() {
    let d = of("guarded_copy", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("enclosing block-stride loop")
            && message(d[0]).contains("at most one partial iteration"),
        "{}",
        message(d[0])
    );
    let w = of("guarded_thread_step", "divergent-branch");
    assert!(
        w.iter().any(|f| f["severity"] == "warning"),
        "{:#?}",
        findings()
    );
    assert!(
        w.iter()
            .all(|f| !message(f).contains("enclosing block-stride loop")),
        "{w:#?}"
    );
}

/// `for (position = pos_ori; position < pos_ori + elem; …)`: the same
/// trip count in every lane, whatever `pos_ori` is.
#[test]
fn a_loop_started_by_assignment_offset_by_its_bound_is_uniform() {
    let d = of("column_sums", "divergent-branch");
    assert!(
        d.iter().all(|f| !message(f).contains("position <")),
        "{d:#?}"
    );
    // The enclosing block-stride loop keeps its note.
    assert_eq!(d.len(), 1, "{d:#?}");
}

/// Operations on literals only are folded at compile time; a literal that
/// meets a float variable still makes a double operation.
#[test]
fn literal_only_double_arithmetic_is_folded() {
    assert!(
        of("folded_constants", "fp64_arithmetic").is_empty(),
        "{:#?}",
        findings()
    );
    let r = of("runtime_double", "fp64_arithmetic");
    assert_eq!(r.len(), 1, "{:#?}", findings());
    assert!(
        message(r[0]).contains("does 1 double-precision"),
        "{}",
        message(r[0])
    );
}

/// `if (c) return 0;` outside loops: an early exit whose taken side is
/// only the return of a literal is not reported.
#[test]
fn an_early_return_of_a_literal_is_not_reported() {
    assert!(
        of("width_of", "divergent-branch").is_empty(),
        "{:#?}",
        findings()
    );
}

/// (audit 20261213 #48, #63: llm.c's `#define ENABLE_BF16` before
/// `#include "common.h"`) A header sees the macros its includer defined
/// before the `#include`: `elem_t` is 2 bytes in the file that defines
/// `USE_HALF`, 4 in the one that does not.
#[test]
fn a_header_sees_its_includers_macros() {
    let all = common::check_fixtures(&[
        "findings/header_ctx/elem.h",
        "findings/header_ctx/half.cu",
        "findings/header_ctx/full.cu",
    ]);
    let msg = |func: &str| {
        all.iter()
            .find(|f| f["function"] == func && f["rule"] == "uncoalesced-global")
            .and_then(|f| f["message"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        msg("rows_half").contains("of 2 B per threadIdx.x"),
        "{all:#?}"
    );
    assert!(
        msg("rows_full").contains("of 4 B per threadIdx.x"),
        "{all:#?}"
    );
}

/// `for (i = threadIdx.x + (V & ~7); i < V; i++)`: a remainder loop of at
/// most 7 iterations, a note that says so; a start rounded from another
/// value is not one.
#[test]
fn a_remainder_loop_states_its_few_iterations() {
    let r = of("remainder_tail", "divergent-branch");
    assert_eq!(r.len(), 1, "{:#?}", findings());
    assert_eq!(r[0]["severity"], "note", "{:#?}", r[0]);
    assert!(
        message(r[0]).contains("a remainder loop")
            && message(r[0]).contains("more than 7 iteration"),
        "{}",
        message(r[0])
    );
    let n = of("not_remainder", "divergent-branch");
    assert!(
        n.iter().all(|f| !message(f).contains("remainder loop")),
        "{n:#?}"
    );
}

/// `if (i + threadIdx.x < len)` in a loop whose counter starts at `len`
/// and only grows: never true, not reported; the enclosing `index < len2`
/// keeps its stride-loop note.
#[test]
fn a_guard_below_the_loops_start_is_never_true() {
    let d = of("pad_from_len", "divergent-branch");
    assert!(
        d.iter().all(|f| !message(f).starts_with("`index < len`")),
        "{d:#?}"
    );
    assert!(
        d.iter().any(|f| message(f).starts_with("`index < len2`")),
        "{d:#?}"
    );
}
