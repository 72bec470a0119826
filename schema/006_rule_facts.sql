-- cudalog store, schema version 6: structural facts house rules need that
-- the other tables lack (loops, double-precision arithmetic). Computed from
-- each function's IR by src/rules/facts.rs (FunctionFacts.rule_facts) and written with the function's rows by the index run.

-- Every for/while/do loop of a function.
CREATE TABLE loops (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    stmt_id     INTEGER NOT NULL,   -- the loop statement (IR statement id, as accesses.stmt_id)
    kind        TEXT NOT NULL CHECK (kind IN ('for', 'while', 'do')),
    line        INTEGER NOT NULL,   -- first line of the loop statement
    col         INTEGER NOT NULL,
    end_line    INTEGER NOT NULL,   -- last line of the loop (its body included)
    depth       INTEGER NOT NULL,   -- 1 for an outermost loop, 2 for a loop inside one, ...
    parent_stmt INTEGER,            -- stmt_id of the enclosing loop, NULL at depth 1
    PRIMARY KEY (function_id, stmt_id)
);

-- Statements that run on every iteration of a loop, at any depth: the loop
-- statement itself (its condition and step) and every statement of its body,
-- not a `for`'s initialiser. Join accesses or barriers on (function_id, stmt_id).
CREATE TABLE loop_stmts (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    loop_stmt   INTEGER NOT NULL,   -- loops.stmt_id
    stmt_id     INTEGER NOT NULL
);
CREATE INDEX loop_stmts_function ON loop_stmts(function_id);

-- Arithmetic of kernels and device functions that runs in double precision:
-- + - * / (and their compound assignments) with a double operand, and math
-- functions called on doubles. Types follow C++'s usual arithmetic
-- conversions over what the front end knows (declared types, casts,
-- literals); an operand of unknown type (template parameter, struct field,
-- call of a user function) is not assumed to be double.
CREATE TABLE fp64_ops (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    line        INTEGER NOT NULL,
    col         INTEGER NOT NULL,
    op          TEXT NOT NULL,      -- '+', '-', '*', '/', '+=', ..., or the math function ('sqrt')
    expr_text   TEXT NOT NULL,      -- the expression, normalised
    cause       TEXT NOT NULL CHECK (cause IN ('literal', 'variable', 'cast', 'element', 'call')),
                                    -- what makes it double: an unsuffixed literal (2.0), a double
                                    -- variable, a cast, an element of a double array, a call
    source      TEXT NOT NULL       -- that operand's text, e.g. '2.0'
);
CREATE INDEX fp64_ops_function ON fp64_ops(function_id);

-- Functions whose definition is written with `__launch_bounds__(...)`, with
-- the arguments as written (functions.launch_bounds holds the value only
-- when it is a constant; this table also lists `__launch_bounds__(BLOCK)`
-- with a template parameter).
CREATE TABLE launch_bounds_decls (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    args        TEXT NOT NULL       -- e.g. 'BLOCK_SIZE, 2'
);
