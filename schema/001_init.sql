-- cudalog store, schema version 1.
-- Table and column names are a contract: rules, users and later stages rely on them.
-- Lines are 1-based, columns 1-based.

CREATE TABLE files (
    id            INTEGER PRIMARY KEY,
    path          TEXT NOT NULL UNIQUE,      -- relative to the workspace root, '/' separators
    content_hash  TEXT NOT NULL,             -- blake3 of the file bytes (hex, 32 chars)
    bytes         INTEGER NOT NULL,
    parse_errors  INTEGER NOT NULL DEFAULT 0 -- parse-error diagnostics in this file
);

CREATE TABLE functions (
    id              INTEGER PRIMARY KEY,
    file_id         INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,            -- unqualified name
    qualified_name  TEXT NOT NULL,            -- namespace/class path + name
    key             TEXT NOT NULL,            -- qualified name + '#' + ordinal (unique per file)
    kind            TEXT NOT NULL CHECK (kind IN ('kernel', 'device', 'host')),
    line            INTEGER NOT NULL,         -- first line (template prefix included)
    end_line        INTEGER NOT NULL,
    col             INTEGER NOT NULL,
    content_hash    TEXT NOT NULL,            -- hash of the lowered function (position-independent)
    template_params TEXT NOT NULL DEFAULT '', -- comma-separated, '' for non-templates
    launch_bounds   INTEGER,                  -- __launch_bounds__ max threads, if constant
    parse_errors    INTEGER NOT NULL DEFAULT 0,
    UNIQUE (file_id, key)
);
CREATE INDEX functions_name ON functions(name);

CREATE TABLE params (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    name        TEXT NOT NULL,
    type        TEXT NOT NULL,
    elem_bytes  INTEGER,                      -- pointee/element size for pointers and arrays
    PRIMARY KEY (function_id, position)
);

CREATE TABLE accesses (
    id            INTEGER PRIMARY KEY,
    function_id   INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    line          INTEGER NOT NULL,
    col           INTEGER NOT NULL,
    array         TEXT NOT NULL,              -- base array/pointer name
    space         TEXT NOT NULL CHECK (space IN ('global', 'shared', 'constant', 'local', 'generic')),
    is_write      INTEGER NOT NULL,           -- 0 read, 1 write (a += yields one of each)
    elem_bytes    INTEGER,                    -- element size, NULL if unknown
    access_bytes  INTEGER,                    -- bytes moved per thread (a struct field: its size)
    field_offset  INTEGER,                    -- byte offset of that field in the element
    is_atomic     INTEGER NOT NULL DEFAULT 0,
    index_text    TEXT NOT NULL,              -- subscripts as written/normalised, e.g. [ty][tx]
    dims          TEXT NOT NULL DEFAULT '',   -- declared extents, e.g. '32,33' ('?' unknown)
    stmt_id       INTEGER NOT NULL            -- IR statement id within the function
);
CREATE INDEX accesses_function ON accesses(function_id);

CREATE TABLE barriers (
    id                INTEGER PRIMARY KEY,
    function_id       INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    line              INTEGER NOT NULL,
    col               INTEGER NOT NULL,
    kind              TEXT NOT NULL,          -- syncthreads, syncwarp, bar.sync, bar.arrive, cg.block.sync, ...
    barrier_id        INTEGER,                -- named barrier id when constant
    thread_count      INTEGER,                -- bar.sync thread count when constant
    barrier_id_text   TEXT,                   -- operand text when not constant
    thread_count_text TEXT,
    stmt_id           INTEGER NOT NULL
);
CREATE INDEX barriers_function ON barriers(function_id);

CREATE TABLE launches (
    id                 INTEGER PRIMARY KEY,
    caller_function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    line               INTEGER NOT NULL,
    col                INTEGER NOT NULL,
    kernel_name        TEXT NOT NULL,
    template_args      TEXT NOT NULL DEFAULT '', -- as written, comma-separated
    grid_text          TEXT NOT NULL,
    block_text         TEXT NOT NULL,
    shmem_text         TEXT NOT NULL DEFAULT '',
    via_api            INTEGER NOT NULL DEFAULT 0 -- 1 for cudaLaunchKernel & co
);
CREATE INDEX launches_kernel ON launches(kernel_name);

CREATE TABLE calls (
    id          INTEGER PRIMARY KEY,
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    line        INTEGER NOT NULL,
    col         INTEGER NOT NULL,
    callee      TEXT NOT NULL
);
CREATE INDEX calls_function ON calls(function_id);

CREATE TABLE diagnostics (
    id          INTEGER PRIMARY KEY,
    file_id     INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    function_id INTEGER REFERENCES functions(id) ON DELETE CASCADE, -- NULL outside functions
    line        INTEGER NOT NULL,
    col         INTEGER NOT NULL,
    severity    TEXT NOT NULL CHECK (severity IN ('error', 'warning', 'note')),
    code        TEXT NOT NULL,                -- e.g. parse-error
    message     TEXT NOT NULL
);
CREATE INDEX diagnostics_file ON diagnostics(file_id);
