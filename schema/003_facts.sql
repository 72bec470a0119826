-- cudalog store, schema version 3: derived per-function facts of the
-- analyses (written by `cudalog check`; rewritten for a function only when
-- its facts change, see functions.facts_hash).

ALTER TABLE functions ADD COLUMN facts_hash TEXT;   -- hash of the derived facts below

-- Thread dependence of each variable (uniformity program).
CREATE TABLE var_facts (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    var_index   INTEGER NOT NULL,   -- position among the function's variables (parameters first)
    name        TEXT NOT NULL,
    depends_x   INTEGER NOT NULL,   -- 1 when some definition depends on threadIdx.x
    depends_y   INTEGER NOT NULL,
    depends_z   INTEGER NOT NULL,
    varies      INTEGER NOT NULL,   -- 1 when it differs per thread otherwise (shuffles, atomics, votes)
    from_memory INTEGER NOT NULL,   -- 1 when it holds data loaded through a thread-dependent address
    uniformity  TEXT NOT NULL CHECK (uniformity IN ('block', 'warp', 'thread')),
                                    -- same for the block / within each warp (varies only in y/z and
                                    -- blockDim.x is a multiple of 32) / may differ within a warp
    PRIMARY KEY (function_id, var_index)
);

-- Stride and cost of each memory access (affine, coalescing and bank programs).
CREATE TABLE access_facts (
    function_id   INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    access_index  INTEGER NOT NULL, -- order among the function's accesses (= accesses rows by id)
    line          INTEGER NOT NULL,
    col           INTEGER NOT NULL,
    array         TEXT NOT NULL,
    space         TEXT NOT NULL,
    is_write      INTEGER NOT NULL,
    stride_x      TEXT,             -- element stride per threadIdx.x: integer, symbolic text, or '?'
    stride_y      TEXT,
    stride_z      TEXT,
    const_offset  INTEGER,          -- constant part of the index, when known
    data_dependent INTEGER NOT NULL,
    sectors_kind  TEXT,             -- global: 'exact' | 'up_to' | 'data_dependent' | 'unknown'; NULL otherwise
    sectors       INTEGER,          -- global: sectors per warp (aligned pattern; bound for up_to)
    sectors_with_offset INTEGER,    -- global: with the known constant offset applied
    min_sectors   INTEGER,          -- global: aligned unit-stride access of the same bytes
    lines         INTEGER,          -- global: 128-byte lines (exact only)
    bank_degree   INTEGER,          -- shared: conflict degree (NULL when unknown)
    single_thread INTEGER NOT NULL, -- 1 inside an `if (tid == 0)`-style region
    PRIMARY KEY (function_id, access_index)
);

-- Every branch point with its divergence class (divergence program).
CREATE TABLE branch_facts (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    line        INTEGER NOT NULL,
    col         INTEGER NOT NULL,
    condition   TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('uniform', 'warp_uniform', 'single_thread', 'boundary_guard', 'divergent')),
    in_expression INTEGER NOT NULL, -- 1 for ?:, && and ||
    memory      INTEGER NOT NULL,   -- divergent region accesses memory
    loops       INTEGER NOT NULL    -- divergent region contains or is a loop
);
CREATE INDEX branch_facts_function ON branch_facts(function_id);

-- Barrier intervals (for the race checks): the statements holding memory
-- accesses, each with every interval it can run in. An interval starts at
-- the function entry (interval_start = -1) or at a block-wide barrier
-- statement; join `accesses` on (function_id, stmt_id).
CREATE TABLE barrier_intervals (
    function_id    INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    stmt_id        INTEGER NOT NULL,
    interval_start INTEGER NOT NULL
);
CREATE INDEX barrier_intervals_function ON barrier_intervals(function_id);

-- Ordering between accessing statements of one function: ordered = 1 when
-- every path from from_stmt to to_stmt crosses a block-wide barrier
-- (happens-before), 0 when to_stmt can follow from_stmt in the same interval.
CREATE TABLE stmt_order (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    from_stmt   INTEGER NOT NULL,
    to_stmt     INTEGER NOT NULL,
    ordered     INTEGER NOT NULL
);
CREATE INDEX stmt_order_function ON stmt_order(function_id);
