-- cudalog store, schema version 8: the arguments of every kernel launch
-- (`k<<<g, b>>>(a0, a1, …)`; not `cudaLaunchKernel`-style launches), with
-- how each changes over the innermost loop around the launch, for house
-- rules (a strided access whose stride is a kernel argument the host loop
-- changes between launches does not waste the same on every launch).
-- Computed from the calling function's IR by src/rules/facts.rs with its
-- other rule facts.
CREATE TABLE launch_args (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE, -- the launching function
    line        INTEGER NOT NULL,   -- the launch's line (= launches.line)
    kernel_name TEXT NOT NULL,
    position    INTEGER NOT NULL,   -- argument position (= params.position of the kernel)
    text        TEXT NOT NULL,      -- the argument as written
    loop_line   INTEGER,            -- first line of the innermost loop around the launch; NULL outside loops
    varies      INTEGER NOT NULL,   -- 1 when that loop assigns a variable the argument reads
    first_value INTEGER             -- its value at the loop's first launch, when an integer constant
                                    -- (a variable last set to a constant before the loop, or the
                                    -- loop's own `for` initialiser)
);
CREATE INDEX launch_args_function ON launch_args(function_id);

-- Databases written by schema 7 have no rows here: rewrite every
-- function's facts on the next check.
UPDATE functions SET facts_hash = NULL;

-- Grid-stride loops of kernels and device functions: a `for` whose step
-- adds to its counter the grid's thread count (an expression with
-- `gridDim`, or the grid group's `size()` / `num_threads()`), directly or
-- through a local. Each thread runs such a loop more than once only when
-- the grid has fewer threads than the data has elements.
CREATE TABLE grid_stride_loops (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    stmt_id     INTEGER NOT NULL    -- loops.stmt_id
);
CREATE INDEX grid_stride_loops_function ON grid_stride_loops(function_id);
