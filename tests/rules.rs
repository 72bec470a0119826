//! House-rule engine: results equal reference evaluations written here in
//! plain Rust (recursion linear, non-linear and mutual; stratified negation;
//! aggregates; named columns over a real store), a property test against a
//! naive fixpoint on random programs, and a located error for every error
//! class.

use cudalog::rules::compile::compile;
use cudalog::rules::eval::Session;
use cudalog::rules::schema::StoreSchema;
use cudalog::rules::{ErrorKind, Origin, RuleError, RuleSource};
use proptest::prelude::*;
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet, HashSet};

type Tuples = BTreeSet<Vec<String>>;

/// Evaluate `text` over the store behind `conn`; every derived relation's tuples.
fn run_on(conn: &Connection, text: &str) -> BTreeMap<String, Tuples> {
    let schema = StoreSchema::read(conn).unwrap();
    let src = RuleSource::new("t.dl", Origin::CommandLine, text);
    let prog = compile(&src, &schema)
        .unwrap_or_else(|e| panic!("{}", e.iter().map(RuleError::render).collect::<String>()));
    let mut s = Session::new(conn);
    let ev = s.evaluate(&prog).unwrap();
    let mut out = BTreeMap::new();
    for (i, r) in prog.rels.iter().enumerate() {
        if r.input.is_none() {
            out.insert(
                r.name.clone(),
                ev.rels[i]
                    .iter()
                    .map(|t| t.iter().map(|v| s.symbols.show(*v)).collect())
                    .collect(),
            );
        }
    }
    out
}

fn run(text: &str) -> BTreeMap<String, Tuples> {
    run_on(&Connection::open_in_memory().unwrap(), text)
}

fn errors_on(conn: &Connection, text: &str) -> Vec<RuleError> {
    let schema = StoreSchema::read(conn).unwrap();
    let src = RuleSource::new("bad.dl", Origin::CommandLine, text);
    match compile(&src, &schema) {
        Ok(_) => panic!("the program is rejected"),
        Err(e) => e,
    }
}

/// The first error of `text` (checked against a new store's tables).
fn error(text: &str) -> RuleError {
    let store = cudalog::store::Store::open_in_memory().unwrap();
    errors_on(store.connection(), text).remove(0)
}

fn pairs(v: &[(i64, i64)]) -> Tuples {
    v.iter()
        .map(|(a, b)| vec![a.to_string(), b.to_string()])
        .collect()
}

fn edges_text(rel: &str, edges: &[(i64, i64)]) -> String {
    edges
        .iter()
        .map(|(a, b)| format!("{rel}({a}, {b}).\n"))
        .collect()
}

/// Transitive closure by repeated squaring until nothing changes.
fn closure(edges: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut c: BTreeSet<(i64, i64)> = edges.iter().copied().collect();
    loop {
        let next: BTreeSet<(i64, i64)> = c
            .iter()
            .flat_map(|&(a, b)| {
                c.iter()
                    .filter(move |&&(x, _)| x == b)
                    .map(move |&(_, d)| (a, d))
            })
            .chain(c.iter().copied())
            .collect();
        if next == c {
            return c.into_iter().collect();
        }
        c = next;
    }
}

fn random_edges(seed: u64, n: i64, m: usize) -> Vec<(i64, i64)> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut v = Vec::new();
    for _ in 0..m {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let a = ((x >> 33) % n as u64) as i64;
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let b = ((x >> 33) % n as u64) as i64;
        v.push((a, b));
    }
    v
}

#[test]
fn linear_and_non_linear_transitive_closure_equal_the_reference() {
    for seed in 0..8 {
        let edges = random_edges(seed, 30, 45);
        let text = format!(
            ".decl e(a: number, b: number)\n{}\
             .decl lin(a: number, b: number)\n\
             lin(X, Y) :- e(X, Y).\n\
             lin(X, Z) :- lin(X, Y), e(Y, Z).\n\
             .decl sq(a: number, b: number)\n\
             sq(X, Y) :- e(X, Y).\n\
             sq(X, Z) :- sq(X, Y), sq(Y, Z).\n",
            edges_text("e", &edges)
        );
        let got = run(&text);
        let want = pairs(&closure(&edges));
        assert_eq!(got["lin"], want, "linear, seed {seed}");
        assert_eq!(got["sq"], want, "non-linear, seed {seed}");
    }
}

#[test]
fn mutual_recursion_even_and_odd_path_lengths() {
    let edges = random_edges(7, 12, 20);
    let text = format!(
        ".decl e(a: number, b: number)\n{}\
         .decl even(a: number, b: number)\n.decl odd(a: number, b: number)\n\
         odd(X, Y) :- e(X, Y).\n\
         even(X, Z) :- odd(X, Y), e(Y, Z).\n\
         odd(X, Z) :- even(X, Y), e(Y, Z).\n",
        edges_text("e", &edges)
    );
    let got = run(&text);
    // Reference: walk lengths by parity, breadth-first over (node, parity).
    let mut odd = BTreeSet::new();
    let mut even = BTreeSet::new();
    for s in 0..12 {
        let mut seen: HashSet<(i64, bool)> = HashSet::new();
        let mut todo = vec![(s, false)];
        while let Some((x, parity)) = todo.pop() {
            for &(a, b) in &edges {
                if a == x && seen.insert((b, !parity)) {
                    todo.push((b, !parity));
                }
            }
        }
        for (n, p) in seen {
            if p {
                odd.insert((s, n));
            } else {
                even.insert((s, n));
            }
        }
    }
    assert_eq!(got["odd"], pairs(&odd.into_iter().collect::<Vec<_>>()));
    assert_eq!(got["even"], pairs(&even.into_iter().collect::<Vec<_>>()));
}

#[test]
fn stratified_negation_over_a_recursive_relation() {
    let edges = random_edges(3, 15, 14);
    let text = format!(
        ".decl e(a: number, b: number)\n{}\
         .decl node(a: number)\nnode(X) :- e(X, _).\nnode(Y) :- e(_, Y).\n\
         .decl reach(a: number, b: number)\n\
         reach(X, Y) :- e(X, Y).\nreach(X, Z) :- reach(X, Y), e(Y, Z).\n\
         .decl unreachable(a: number, b: number)\n\
         unreachable(X, Y) :- node(X), node(Y), X != Y, !reach(X, Y).\n\
         .decl sink(a: number)\nsink(X) :- node(X), !e(X, _).\n",
        edges_text("e", &edges)
    );
    let got = run(&text);
    let reach: BTreeSet<(i64, i64)> = closure(&edges).into_iter().collect();
    let nodes: BTreeSet<i64> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
    let mut want = Vec::new();
    for &x in &nodes {
        for &y in &nodes {
            if x != y && !reach.contains(&(x, y)) {
                want.push((x, y));
            }
        }
    }
    assert_eq!(got["unreachable"], pairs(&want));
    let sinks: Tuples = nodes
        .iter()
        .filter(|n| !edges.iter().any(|e| e.0 == **n))
        .map(|n| vec![n.to_string()])
        .collect();
    assert_eq!(got["sink"], sinks);
}

#[test]
fn aggregates_count_sum_min_max_per_group() {
    let rows = random_edges(11, 9, 40);
    let text = format!(
        ".decl e(g: number, v: number)\n{}\
         .decl g(g: number)\ng(G) :- e(G, _).\ng(100).\n\
         .decl c(g: number, n: number)\nc(G, N) :- g(G), N = count : e(G, _).\n\
         .decl s(g: number, n: number)\ns(G, N) :- g(G), N = sum V : {{ e(G, V) }}.\n\
         .decl lo(g: number, n: number)\nlo(G, N) :- g(G), N = min V : {{ e(G, V) }}.\n\
         .decl hi(g: number, n: number)\nhi(G, N) :- g(G), N = max V * 2 : {{ e(G, V), V > 2 }}.\n\
         .decl total(n: number)\ntotal(N) :- N = count : {{ e(_, V), V >= 0 }}.\n",
        edges_text("e", &rows)
    );
    let got = run(&text);
    let set: BTreeSet<(i64, i64)> = rows.iter().copied().collect();
    let groups: BTreeSet<i64> = set.iter().map(|r| r.0).chain([100]).collect();
    let of = |g: i64| set.iter().filter(move |r| r.0 == g).map(|r| r.1);
    let c: Vec<(i64, i64)> = groups.iter().map(|&g| (g, of(g).count() as i64)).collect();
    let s: Vec<(i64, i64)> = groups.iter().map(|&g| (g, of(g).sum())).collect();
    let lo: Vec<(i64, i64)> = groups
        .iter()
        .filter_map(|&g| of(g).min().map(|m| (g, m)))
        .collect();
    let hi: Vec<(i64, i64)> = groups
        .iter()
        .filter_map(|&g| of(g).filter(|v| *v > 2).max().map(|m| (g, m * 2)))
        .collect();
    assert_eq!(got["c"], pairs(&c), "count (an empty group counts 0)");
    assert_eq!(got["s"], pairs(&s), "sum (an empty group sums to 0)");
    assert_eq!(got["lo"], pairs(&lo), "min (no result for an empty group)");
    assert_eq!(
        got["hi"],
        pairs(&hi),
        "max of an expression under a condition"
    );
    assert_eq!(
        got["total"],
        [vec![set.len().to_string()]]
            .into_iter()
            .collect::<Tuples>()
    );
}

#[test]
fn symbols_arithmetic_functors_and_nil() {
    let got = run(r#"
        .decl w(s: symbol, n: number)
        w("alpha", 3). w("beta", -4). w("gamma", 10).
        .decl r(s: symbol, n: number)
        r(cat(S, "!", to_string(N * 2 + 1)), strlen(S)) :- w(S, N), N > -5, S != "gamma".
        .decl m(s: symbol)
        m(S) :- w(S, _), match("[ab].*a", S), contains("et", S).
        .decl f(x: float)
        f(X) :- w(_, N), N = 10, X = to_float(N) / 4.0.
        .decl z(n: number)
        z(N) :- w(_, N), N / 0 = 1.
        z(N) :- w(_, N), Q = N - 10, Q = 0, X = nil, X = nil.
        .decl sub(s: symbol)
        sub(substr(S, 1, 3)) :- w(S, _), S < "beta".
    "#);
    let t = |v: &[&str]| -> Tuples { v.iter().map(|s| vec![s.to_string()]).collect() };
    assert_eq!(
        got["r"],
        [
            vec!["alpha!7".to_string(), "5".into()],
            vec!["beta!-7".into(), "4".into()]
        ]
        .into_iter()
        .collect()
    );
    assert_eq!(got["m"], t(&["beta"]));
    assert_eq!(got["f"], t(&["2.5"]));
    assert_eq!(got["z"], t(&["10"]), "division by zero drops the tuple");
    assert_eq!(got["sub"], t(&["lph"]));
}

/// Store rows for the named-column tests: two files, three functions, accesses.
fn store_with_rows() -> cudalog::store::Store {
    let store = cudalog::store::Store::open_in_memory().unwrap();
    store
        .connection()
        .execute_batch(
            "INSERT INTO files(id, path, content_hash, bytes) VALUES (1, 'a.cu', 'h', 1), (2, 'b.cu', 'h', 1);
             INSERT INTO functions(id, file_id, name, qualified_name, key, kind, line, end_line, col, content_hash, launch_bounds)
               VALUES (10, 1, 'k1', 'k1', 'k1#0', 'kernel', 1, 9, 1, 'h', NULL),
                      (11, 1, 'd1', 'd1', 'd1#0', 'device', 10, 12, 1, 'h', NULL),
                      (12, 2, 'k2', 'ns::k2', 'ns::k2#0', 'kernel', 1, 5, 1, 'h', 128);
             INSERT INTO accesses(id, function_id, line, col, array, space, is_write, elem_bytes, index_text, stmt_id)
               VALUES (1, 10, 3, 5, 's', 'shared', 1, 4, '[t]', 1),
                      (2, 10, 4, 5, 's', 'shared', 0, 4, '[t + 1]', 2),
                      (3, 10, 4, 9, 'g', 'global', 1, NULL, '[i]', 2),
                      (4, 12, 2, 3, 's', 'shared', 1, 8, '[t]', 1);
             INSERT INTO calls(id, function_id, line, col, callee) VALUES (1, 10, 5, 1, 'd1'), (2, 11, 11, 1, 'd1');",
        )
        .unwrap();
    store
}

#[test]
fn named_columns_positional_order_and_nil_match_the_store() {
    let store = store_with_rows();
    let conn = store.connection();
    let got = run_on(
        conn,
        r#"
        .decl shared_writes(f: number, line: number, arr: symbol)
        shared_writes(F, L, A) :- accesses(function_id: F, space: "shared", is_write: 1, line: L, array: A).
        .decl by_position(id: number, name: symbol)
        by_position(I, N) :- functions(I, _, N, _, _, "kernel", _, _, _, _, _, _, _, _).
        .decl unbounded(name: symbol)
        unbounded(N) :- functions(name: N, kind: "kernel", launch_bounds: nil).
        .decl unknown_size(arr: symbol)
        unknown_size(A) :- accesses(array: A, elem_bytes: E), E = nil.
        .decl per_function(name: symbol, n: number)
        per_function(N, C) :- functions(id: F, name: N), C = count : accesses(function_id: F), C > 0.
        .decl self_recursive(name: symbol)
        self_recursive(N) :- calls(function_id: F, callee: N), functions(id: F, name: N).
    "#,
    );
    let sql = |q: &str| -> Tuples {
        let mut st = conn.prepare(q).unwrap();
        let n = st.column_count();
        st.query_map([], |r| {
            Ok((0..n)
                .map(|i| match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    _ => "nil".into(),
                })
                .collect::<Vec<_>>())
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    assert_eq!(
        got["shared_writes"],
        sql(
            "SELECT function_id, line, array FROM accesses WHERE space = 'shared' AND is_write = 1"
        )
    );
    assert_eq!(
        got["by_position"],
        sql("SELECT id, name FROM functions WHERE kind = 'kernel'")
    );
    assert_eq!(
        got["unbounded"],
        sql("SELECT name FROM functions WHERE kind = 'kernel' AND launch_bounds IS NULL")
    );
    assert_eq!(
        got["unknown_size"],
        sql("SELECT array FROM accesses WHERE elem_bytes IS NULL")
    );
    assert_eq!(
        got["per_function"],
        sql(
            "SELECT fn.name, COUNT(*) FROM functions fn JOIN accesses a ON a.function_id = fn.id GROUP BY fn.id"
        )
    );
    assert_eq!(got["self_recursive"], sql("SELECT 'd1'"));
}

#[test]
fn added_columns_are_visible_and_named_atoms_survive_them() {
    let store = store_with_rows();
    let conn = store.connection();
    conn.execute_batch("ALTER TABLE accesses ADD COLUMN hotness INTEGER NOT NULL DEFAULT 7")
        .unwrap();
    let got = run_on(
        conn,
        ".decl hot(a: symbol, h: number)\nhot(A, H) :- accesses(array: A, hotness: H, space: \"global\").\n",
    );
    assert_eq!(
        got["hot"],
        [vec!["g".to_string(), "7".into()]].into_iter().collect()
    );
}

#[test]
fn the_store_is_not_written_and_stays_readable_after_a_run() {
    let store = store_with_rows();
    let conn = store.connection();
    let before: i64 = conn
        .query_row("SELECT total_changes()", [], |r| r.get(0))
        .unwrap();
    run_on(
        conn,
        ".decl x(n: number)\nx(F) :- accesses(function_id: F).\n",
    );
    let after: i64 = conn
        .query_row("SELECT total_changes()", [], |r| r.get(0))
        .unwrap();
    assert_eq!(before, after);
    assert!(conn.is_autocommit(), "the read transaction is closed");
}

// ---- errors: one located error per class ----

fn assert_error(text: &str, kind: ErrorKind, line: u32, col: u32, words: &[&str]) {
    let e = error(text);
    assert_eq!(e.kind, kind, "{}", e.render());
    assert_eq!((e.line, e.col), (line, col), "{}", e.render());
    for w in words {
        assert!(e.message.contains(w), "`{w}` not in: {}", e.render());
    }
    let r = e.render();
    assert!(
        r.starts_with(&format!("bad.dl:{line}:{col}: error: ")),
        "{r}"
    );
    assert!(
        r.lines().nth(2).is_some_and(|l| l.contains('^')),
        "caret line: {r}"
    );
}

#[test]
fn every_error_class_is_located() {
    assert_error(
        "a(X) :- accesses(function_id: X) b(X).\n",
        ErrorKind::Parse,
        1,
        34,
        &["expected", "found"],
    );
    // At the end of the file: just past the last token, not an empty line.
    assert_error(
        "a(X) :- accesses(function_id: X)\n",
        ErrorKind::Parse,
        1,
        33,
        &["expected", "end of the file"],
    );
    assert_error(
        ".decl a(x: number)\na(X) :-\n  acesses(function_id: X).\n",
        ErrorKind::UnknownRelation,
        3,
        3,
        &["unknown relation `acesses`", "did you mean `accesses`"],
    );
    assert_error(
        ".decl a(x: number)\na(X) :- accesses(function: X).\n",
        ErrorKind::UnknownColumn,
        2,
        18,
        &["no column `function`", "did you mean `function_id`"],
    );
    assert_error(
        ".decl a(x: number)\na(X) :- calls(X, _).\n",
        ErrorKind::Arity,
        2,
        9,
        &["5 column(s)", "2 argument(s)"],
    );
    assert_error(
        ".decl a(x: number)\na(X) :- functions(name: X).\n",
        ErrorKind::Type,
        2,
        3,
        &["symbol", "number"],
    );
    assert_error(
        ".decl a(x: number, y: number)\na(X, Y) :- calls(function_id: X).\n",
        ErrorKind::Unbound,
        2,
        6,
        &["`Y`", "head"],
    );
    assert_error(
        ".decl a(x: number)\na(X) :- calls(function_id: X), !functions(id: X, name: N).\n",
        ErrorKind::Unbound,
        2,
        56,
        &["`N`", "negation"],
    );
    assert_error(
        ".decl a(x: number)\n.decl b(x: number)\na(X) :- calls(function_id: X), !b(X).\nb(X) :- a(X).\n",
        ErrorKind::Unstratifiable,
        3,
        32,
        &["negation through recursion", "`a` -> !`b` -> `a`"],
    );
    assert_error(
        ".decl a(x: number, n: number)\na(X, N) :- a(X, _), N = count : a(X, _).\n",
        ErrorKind::Unstratifiable,
        2,
        25,
        &["aggregation through recursion"],
    );
}

#[test]
fn more_misuse_is_reported_not_panicked_on() {
    let cases = [
        (".decl accesses(x: number)\n", "store table"),
        (
            ".decl a(x: number)\n.decl a(x: number)\n",
            "already declared",
        ),
        (".decl a(x: nmber)\n", "did you mean `number`"),
        ("calls(1, 2, 3, 4, \"f\").\n", "store table"),
        (
            ".decl a(x: number)\na(_) :- calls(function_id: _).\n",
            "`_` cannot appear in a head",
        ),
        (".decl a(x: number)\na(X) :- X > 3.\n", "not bound"),
        (
            ".decl a(x: number)\na(N) :- N = count : { calls(function_id: F) }, F > 1.\n",
            "not bound",
        ),
        (
            ".decl a(x: number)\na(X) :- calls(function_id: X), X = \"k\".\n",
            "compares a number with a symbol",
        ),
        (
            ".decl a(x: symbol)\na(X + 1) :- functions(name: X).\n",
            "needs numbers",
        ),
        (".lint l note \"m {nope}\"\nl(1, 2).\n", "no column `nope`"),
        (
            ".decl l(line: number)\n.lint l note \"m\"\n",
            "needs a column `function_id",
        ),
        (
            ".decl l(function_id: number, line: number, severity: number)\n.lint l note \"m\"\n",
            "must be a symbol",
        ),
        (".output calls\n", "store table"),
        (".input mine\n", "not a store table"),
        (
            ".decl a(x: symbol)\na(S) :- functions(name: S), match(\"(\", S).\n",
            "regular expression",
        ),
        (
            ".decl a(x: number)\na(X) :- calls(function_id: X, function_id: X).\n",
            "given twice",
        ),
        (
            ".decl a(x: number)\na(N) :- N = count : { b(N) }.\n",
            "unknown relation",
        ),
    ];
    for (text, words) in cases {
        let e = error(text);
        assert!(
            e.message.contains(words),
            "{text:?}: `{words}` not in {}",
            e.render()
        );
    }
}

// ---- property: the engine equals a naive fixpoint on random programs ----

#[derive(Clone, Debug)]
enum Arg {
    Var(usize),
    Const(i64),
    Wild,
}

#[derive(Clone, Debug)]
struct Rule {
    head: (usize, [Arg; 2]),
    pos: Vec<(usize, [Arg; 2])>,
    neg: Vec<(usize, [Arg; 2])>,
    cmp: Option<(bool, usize, usize)>,
}

/// Relations: 0..2 facts (e0, e1), 2..5 level one (p0..p2: positive on
/// anything of levels 0-1, negating facts), 5..7 level two (q0, q1:
/// positive on anything, negating levels 0-1).
const NAMES: [&str; 7] = ["e0", "e1", "p0", "p1", "p2", "q0", "q1"];
const VARS: [&str; 3] = ["X", "Y", "Z"];
const DOMAIN: i64 = 5;

fn level(r: usize) -> usize {
    match r {
        0..=1 => 0,
        2..=4 => 1,
        _ => 2,
    }
}

fn arg_strategy() -> impl Strategy<Value = Arg> {
    prop_oneof![6 => (0..3usize).prop_map(Arg::Var), 1 => (0..DOMAIN).prop_map(Arg::Const)]
}

fn rule_strategy() -> impl Strategy<Value = Rule> {
    (
        2..7usize,
        prop::collection::vec((0..7usize, arg_strategy(), arg_strategy()), 1..4),
        prop::collection::vec((0..5usize, 0..4usize, 0..4usize), 0..2),
        prop::option::of((any::<bool>(), 0..3usize, 0..3usize)),
        (0..8usize, 0..8usize),
    )
        .prop_map(|(head_rel, pos, neg, cmp, (h0, h1))| {
            let lvl = level(head_rel);
            let pos: Vec<(usize, [Arg; 2])> = pos
                .into_iter()
                .map(|(r, a, b)| (if level(r) > lvl { r % 5 } else { r }, [a, b]))
                .collect();
            let bound: Vec<usize> = {
                let mut v: Vec<usize> = pos
                    .iter()
                    .flat_map(|(_, a)| a.iter())
                    .filter_map(|a| match a {
                        Arg::Var(v) => Some(*v),
                        _ => None,
                    })
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            let pick = |k: usize| -> Arg {
                if bound.is_empty() || k >= 6 {
                    Arg::Const(k as i64 % DOMAIN)
                } else {
                    Arg::Var(bound[k % bound.len()])
                }
            };
            let neg_limit = if lvl == 1 { 2 } else { 5 };
            let neg = neg
                .into_iter()
                .map(|(r, a, b)| {
                    let arg = |k: usize| if k == 3 { Arg::Wild } else { pick(k) };
                    (r % neg_limit, [arg(a), arg(b)])
                })
                .collect();
            let cmp = cmp
                .filter(|_| !bound.is_empty())
                .map(|(lt, a, b)| (lt, bound[a % bound.len()], bound[b % bound.len()]));
            Rule {
                head: (head_rel, [pick(h0), pick(h1)]),
                pos,
                neg,
                cmp,
            }
        })
}

fn arg_text(a: &Arg) -> String {
    match a {
        Arg::Var(v) => VARS[*v].to_string(),
        Arg::Const(c) => c.to_string(),
        Arg::Wild => "_".into(),
    }
}

fn program_text(facts: &[(usize, i64, i64)], rules: &[Rule]) -> String {
    let mut s = String::new();
    for n in NAMES {
        s.push_str(&format!(".decl {n}(a: number, b: number)\n"));
    }
    for (r, a, b) in facts {
        s.push_str(&format!("{}({a}, {b}).\n", NAMES[*r]));
    }
    for r in rules {
        let atom = |(rel, args): &(usize, [Arg; 2])| {
            format!(
                "{}({}, {})",
                NAMES[*rel],
                arg_text(&args[0]),
                arg_text(&args[1])
            )
        };
        let mut body: Vec<String> = r.pos.iter().map(atom).collect();
        body.extend(r.neg.iter().map(|n| format!("!{}", atom(n))));
        if let Some((lt, a, b)) = r.cmp {
            body.push(format!(
                "{} {} {}",
                VARS[a],
                if lt { "<" } else { "!=" },
                VARS[b]
            ));
        }
        s.push_str(&format!("{} :- {}.\n", atom(&r.head), body.join(", ")));
    }
    s
}

/// Naive evaluation: every rule under every assignment of X, Y, Z over the
/// domain, level by level, until nothing changes.
fn naive(facts: &[(usize, i64, i64)], rules: &[Rule]) -> Vec<BTreeSet<(i64, i64)>> {
    let mut rel: Vec<BTreeSet<(i64, i64)>> = vec![BTreeSet::new(); 7];
    for &(r, a, b) in facts {
        rel[r].insert((a, b));
    }
    for lvl in 1..=2 {
        loop {
            let mut changed = false;
            for r in rules.iter().filter(|r| level(r.head.0) == lvl) {
                for x in 0..DOMAIN {
                    for y in 0..DOMAIN {
                        for z in 0..DOMAIN {
                            let env = [x, y, z];
                            let val = |a: &Arg| match a {
                                Arg::Var(v) => Some(env[*v]),
                                Arg::Const(c) => Some(*c),
                                Arg::Wild => None,
                            };
                            let holds = |(rr, args): &(usize, [Arg; 2])| {
                                rel[*rr].iter().any(|&(p, q)| {
                                    val(&args[0]).is_none_or(|v| v == p)
                                        && val(&args[1]).is_none_or(|v| v == q)
                                })
                            };
                            if !r.pos.iter().all(holds) || r.neg.iter().any(holds) {
                                continue;
                            }
                            if let Some((lt, a, b)) = r.cmp
                                && !(if lt {
                                    env[a] < env[b]
                                } else {
                                    env[a] != env[b]
                                })
                            {
                                continue;
                            }
                            let t = (val(&r.head.1[0]).unwrap(), val(&r.head.1[1]).unwrap());
                            if rel[r.head.0].insert(t) {
                                changed = true;
                            }
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }
    rel
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn engine_equals_naive_fixpoint(
        facts in prop::collection::vec((0..2usize, 0..DOMAIN, 0..DOMAIN), 0..14),
        rules in prop::collection::vec(rule_strategy(), 1..7),
    ) {
        let text = program_text(&facts, &rules);
        let got = run(&text);
        let want = naive(&facts, &rules);
        for (i, n) in NAMES.iter().enumerate() {
            let w: Vec<(i64, i64)> = want[i].iter().copied().collect();
            prop_assert_eq!(&got[*n], &pairs(&w), "relation {} of\n{}", n, text);
        }
    }
}

/// When every atom of a table binds constants, only the rows that can match
/// one of them are loaded (a `WHERE` of the atoms' constants); the results,
/// counts and negations included, are those of the whole table.
#[test]
fn constant_atoms_filter_the_rows_loaded_without_changing_results() {
    let store = store_with_rows();
    let conn = store.connection();
    let text = r#"
        .decl shared_writes(f: number, n: number)
        shared_writes(F, N) :- functions(id: F, kind: "kernel"),
            N = count : accesses(function_id: F, space: "shared", is_write: 1).
        .decl no_global_write(f: number)
        no_global_write(F) :- functions(id: F, kind: "kernel"),
            !accesses(function_id: F, space: "global", is_write: 1).
    "#;
    let schema = StoreSchema::read(conn).unwrap();
    let src = RuleSource::new("t.dl", Origin::CommandLine, text);
    let prog = compile(&src, &schema).unwrap();
    let filter = |table: &str| {
        prog.rels
            .iter()
            .find_map(|r| r.input.as_ref().filter(|i| i.table == table))
            .map(|i| i.filter.clone())
            .unwrap()
    };
    // Constants, and (session 7) a semi-join: `F` is bound by the positive
    // `functions(id: F, kind: "kernel")` of both rules.
    let semi = "\"function_id\" IN (SELECT \"id\" FROM \"functions\" WHERE \"kind\" = 'kernel')";
    assert_eq!(
        filter("accesses"),
        format!(
            "(\"space\" = 'global' AND \"is_write\" = 1 AND {semi}) OR (\"space\" = 'shared' AND \"is_write\" = 1 AND {semi})"
        )
    );
    assert_eq!(filter("functions"), "(\"kind\" = 'kernel')");
    let got = run_on(conn, text);
    let rows = |v: &[&[&str]]| -> Tuples {
        v.iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect()
    };
    assert_eq!(got["shared_writes"], rows(&[&["10", "1"], &["12", "1"]]));
    assert_eq!(got["no_global_write"], rows(&[&["12"]]));
    // Through a derived relation: `kern(F)`'s rule binds F from kernels.
    let derived = r#"
        .decl kern(f: number)
        kern(F) :- functions(id: F, kind: "kernel").
        .decl writes(f: number, l: number)
        writes(F, L) :- kern(F), accesses(function_id: F, line: L, is_write: 1).
    "#;
    let prog = compile(
        &RuleSource::new("d.dl", Origin::CommandLine, derived),
        &schema,
    )
    .unwrap();
    let acc = prog
        .rels
        .iter()
        .find_map(|r| r.input.as_ref().filter(|i| i.table == "accesses"))
        .unwrap();
    assert!(acc.filter.contains(semi), "{}", acc.filter);
    let got = run_on(conn, derived);
    assert_eq!(
        got["writes"],
        rows(&[&["10", "3"], &["10", "4"], &["12", "2"]])
    );
    // One atom without a constant: the whole table is read.
    let open = compile(
        &RuleSource::new(
            "u.dl",
            Origin::CommandLine,
            ".decl a(f: number)\na(F) :- accesses(function_id: F, space: \"shared\"), accesses(function_id: F).\n",
        ),
        &schema,
    )
    .unwrap();
    assert!(
        open.rels
            .iter()
            .all(|r| r.input.as_ref().is_none_or(|i| i.filter.is_empty()))
    );
}
