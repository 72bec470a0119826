-- cudalog store, schema version 5: what a restarted process or `watch`
-- needs to reuse unchanged work, and findings kept per function.
-- The cache_* / *_cache tables are cudalog's own bookkeeping: they may
-- change between versions and are not part of the query contract.

-- Findings are now written per function (rewritten only when that
-- function's results change) and carry what `check` prints.
ALTER TABLE findings ADD COLUMN end_col INTEGER;  -- last column (exclusive) of the caret on `line`
ALTER TABLE findings ADD COLUMN facts TEXT;       -- JSON: the facts behind the finding
CREATE INDEX findings_function ON findings(function_id);

-- Deleting a function cascades into these tables: index their keys.
CREATE INDEX launches_caller ON launches(caller_function_id);
CREATE INDEX diagnostics_function ON diagnostics(function_id);

-- Fingerprints of what every cached result depends on besides the sources:
-- key 'engine' (the cudalog build and its configuration).
CREATE TABLE cache_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Per indexed file: the hash of everything its scan read (its content, the
-- content and include resolution of every header it includes, the
-- engine), and its symbols (JSON: definitions, launch sites, device-side
-- calls, includes), which a new process reads instead of parsing the file.
CREATE TABLE file_cache (
    file_id   INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    deps_hash TEXT NOT NULL,
    symbols   TEXT NOT NULL
);

-- Per function: the hash of its cross-function inputs (launch dimensions,
-- callee summaries, what callers pass) and of the results derived from
-- them, and the results other functions read (JSON).
CREATE TABLE function_cache (
    function_id         INTEGER PRIMARY KEY REFERENCES functions(id) ON DELETE CASCADE,
    inputs_hash         TEXT,
    results_hash        TEXT,
    summary_inputs_hash TEXT,
    summary             TEXT,
    call_args           TEXT NOT NULL DEFAULT '[]'
);

-- Facts written by earlier versions have no cache rows: rewrite them.
UPDATE functions SET facts_hash = NULL;
