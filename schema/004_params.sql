-- cudalog store, schema version 4: what the callers of each device function
-- pass for its parameters (the facts `check` analyses the device function
-- with; rewritten with the other derived facts, see functions.facts_hash).
-- One row per parameter of a device function that has callers in the
-- workspace (none for kernels, recursive functions, or functions nobody
-- calls: their parameters are assumed thread-invariant).
CREATE TABLE param_facts (
    function_id    INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    param_index    INTEGER NOT NULL,  -- position among the parameters
    name           TEXT NOT NULL,
    depends_x      INTEGER NOT NULL,  -- 1 when some caller passes a value depending on threadIdx.x
    depends_y      INTEGER NOT NULL,
    depends_z      INTEGER NOT NULL,
    varies         INTEGER NOT NULL,  -- ... or one that differs per thread otherwise
    stride_x       TEXT,              -- joined stride of the arguments per threadIdx.x: integer,
    stride_y       TEXT,              -- symbolic text or '?'; NULL when not known at all
    stride_z       TEXT,
    pointer_space  TEXT,              -- space every caller's pointer points into; NULL when unknown or they differ
    pointer_offset_x TEXT,            -- joined stride per threadIdx.x of the pointer's element offset
    PRIMARY KEY (function_id, param_index)
);

-- Databases written by schema 3 have facts hashes without these rows:
-- rewrite every function's facts on the next check.
UPDATE functions SET facts_hash = NULL;
