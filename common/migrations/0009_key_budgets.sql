-- API key daily budgets (scheduler/ and quota/budget.c). Work an API key
-- starts is recorded with the key; what it is metered counts against the
-- key's daily budget (UTC day), which is checked before it starts and while
-- it runs. Work started from a browser session has no key and no budget.

-- The key that started a job or kernel (NULL: a browser session). Not a
-- foreign key: keys are revoked, not deleted, and the history stays.
ALTER TABLE jobs ADD COLUMN key_id INTEGER;
CREATE INDEX jobs_key ON jobs(key_id) WHERE key_id IS NOT NULL;

-- Which key a piece of work (ref "job:12"; later deployments and
-- submissions) is metered against: one row per ref, written before the work
-- can be metered.
CREATE TABLE quota_budget_refs (
    ref        TEXT PRIMARY KEY,
    key_id     INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);

-- Each metered interval carries the key of its ref (copied when the interval
-- is decided), so a key's spending on a day is one indexed sum.
ALTER TABLE quota_meter ADD COLUMN key_id INTEGER;
CREATE INDEX quota_meter_key ON quota_meter(key_id, day) WHERE key_id IS NOT NULL;
