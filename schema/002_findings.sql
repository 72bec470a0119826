-- cudalog store, schema version 2: findings of `cudalog check`.

CREATE TABLE findings (
    id          INTEGER PRIMARY KEY,
    rule        TEXT NOT NULL,               -- e.g. barrier-divergence
    severity    TEXT NOT NULL CHECK (severity IN ('error', 'warning', 'note')),
    file        TEXT NOT NULL,               -- path as in files.path
    line        INTEGER NOT NULL,
    col         INTEGER NOT NULL,
    function_id INTEGER REFERENCES functions(id) ON DELETE CASCADE,
    message     TEXT NOT NULL,
    suppressed  INTEGER NOT NULL DEFAULT 0   -- 1 when a cudalog-ignore comment covers it
);
CREATE INDEX findings_rule ON findings(rule);
