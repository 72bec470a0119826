-- cudalog store, schema version 9: each global access's share of its
-- function's estimated global traffic (issue 8 audit #22, #46), so house
-- rules can skip or demote accesses that are a tiny part of a launch's
-- traffic, as the built-in coalescing check does with `[cost]
-- small_access_percent`.
-- An upper bound in per mille (0-1000) computed by
-- `coalescing::traffic_shares` from the same analysis as the other
-- access_facts columns; NULL when it cannot be bounded (not a costed global
-- access, a loop of unknown trip count around it, unknown block size).
ALTER TABLE access_facts ADD COLUMN traffic_share_permille INTEGER;

-- Databases written by schema 8 have no values here: rewrite every
-- function's facts on the next check.
UPDATE functions SET facts_hash = NULL;
