-- cudalog store, schema version 7: resource bounds (issue 10). For every
-- kernel, a symbolic upper bound per cost metric and scope, computed by
-- src/bounds (symbolic warp execution + AARA/LP) from the kernel's IR and
-- facts under the [cost] model, with symbolic launch dimensions. Rewritten
-- with the kernel's other derived facts, i.e. only when its facts change.

CREATE TABLE bounds (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE, -- the kernel
    metric      TEXT NOT NULL CHECK (metric IN ('sectors', 'conflicts', 'divwarps', 'steps')),
                                  -- global-memory sectors, extra shared-memory wavefronts (bank
                                  -- conflicts), divergent branch/loop tests, steps (one per operation)
    scope       TEXT NOT NULL CHECK (scope IN ('per_warp', 'whole_launch')),
                                  -- the worst warp, or every warp of the launch
    expression  TEXT,             -- the bound over the kernel's parameter names, blockDim.x..z,
                                  -- gridDim.x..z, integers, + - * /, max, min, ceil, floor, log2;
                                  -- NULL unless status = 'ok'
    status      TEXT NOT NULL CHECK (status IN ('ok', 'no_bound', 'timeout')),
    reason      TEXT,             -- why there is no bound; for 'ok', the layout assumption if any
    solver_ms   REAL NOT NULL,    -- milliseconds spent in the LP solver for this bound (0 for
                                  -- whole_launch, derived from per_warp)
    facts_hash  TEXT NOT NULL,    -- functions.facts_hash the bound was computed from
    PRIMARY KEY (function_id, metric, scope)
);
