-- Model deployments (serving/, serve.h): deployments, their model versions
-- and replicas, the call log, the idempotent batches that charge calls to
-- the ledger, and per-key serve limits. Models live in
-- DATA/models/<deployment>/v<n>/model.pdmodel|.pdiparams, never in a column.

CREATE TABLE deployments (
    id                    INTEGER PRIMARY KEY,
    user_id               INTEGER NOT NULL REFERENCES users(id),
    name                  TEXT NOT NULL,
    kind                  TEXT NOT NULL DEFAULT 'model',     -- 'model' ('python' later)
    resource              TEXT NOT NULL,                      -- a scheduler class: replicas' limits and price
    tier                  TEXT NOT NULL,                      -- the owner's tier when last changed (free allowance)
    replicas              INTEGER NOT NULL,
    max_batch             INTEGER NOT NULL,
    max_delay_ms          INTEGER NOT NULL,
    timeout_ms            INTEGER NOT NULL,
    price_mcoins_per_call INTEGER NOT NULL DEFAULT 0,         -- what a caller pays per call
    allow_nan             INTEGER NOT NULL DEFAULT 0,
    status                TEXT NOT NULL,                      -- 'running'|'stopped'|'deleted'
    version               INTEGER NOT NULL,                   -- the model version replicas serve
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL
);
CREATE INDEX deployments_user ON deployments(user_id, id);
CREATE UNIQUE INDEX deployments_name ON deployments(user_id, name) WHERE status != 'deleted';

CREATE TABLE deployment_versions (
    deployment_id INTEGER NOT NULL REFERENCES deployments(id),
    number        INTEGER NOT NULL,
    source        TEXT NOT NULL,          -- JSON: {project_id, version, path} | {job_id, path}
    sha256        TEXT NOT NULL,          -- of the model file then the parameters file
    bytes         INTEGER NOT NULL,
    inputs        TEXT NOT NULL,          -- JSON [{name, dtype, shape}] from the model
    outputs       TEXT NOT NULL,          -- JSON [name, ...]
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (deployment_id, number)
);

-- One row per replica process ever started; the owner is metered per
-- replica (quota_meter ref "deployment:<id>:r<replica id>").
CREATE TABLE deployment_replicas (
    id            INTEGER PRIMARY KEY,
    deployment_id INTEGER NOT NULL REFERENCES deployments(id),
    version       INTEGER NOT NULL,
    status        TEXT NOT NULL,          -- 'starting'|'ready'|'draining'|'ended'|'failed'
    detail        TEXT NOT NULL DEFAULT '',
    started_at    INTEGER NOT NULL,
    ended_at      INTEGER,
    meter_seq     INTEGER NOT NULL DEFAULT 0,
    metered_ms    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX deployment_replicas_dep ON deployment_replicas(deployment_id, id);

-- Every call, written before it is answered. batch_id is set when the call
-- joins a charge batch (in one transaction with the batch row).
CREATE TABLE serve_calls (
    id            INTEGER PRIMARY KEY,
    at            INTEGER NOT NULL,       -- ms UTC
    day           TEXT NOT NULL,          -- 'YYYY-MM-DD' UTC
    deployment_id INTEGER NOT NULL,
    key_id        INTEGER,                -- NULL: a browser session
    user_id       INTEGER NOT NULL,       -- the caller (pays cost_mcoins)
    version       INTEGER NOT NULL,
    status        INTEGER NOT NULL,       -- HTTP status answered
    latency_ms    INTEGER NOT NULL,
    batch_size    INTEGER NOT NULL,
    cost_mcoins   INTEGER NOT NULL,
    error         TEXT,
    batch_id      INTEGER
);
CREATE INDEX serve_calls_dep ON serve_calls(deployment_id, day);
CREATE INDEX serve_calls_key ON serve_calls(key_id, day) WHERE key_id IS NOT NULL;
CREATE INDEX serve_calls_unbatched ON serve_calls(user_id) WHERE batch_id IS NULL AND cost_mcoins > 0;

-- A charge of many calls to one caller, posted with quota_charge under the
-- idempotency key 'serve-batch-<id>' (a repeat after a crash posts nothing).
CREATE TABLE serve_batches (
    id            INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL,
    amount_mcoins INTEGER NOT NULL,
    calls         INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    posted_at     INTEGER,
    transfer_id   INTEGER,
    last_error    TEXT
);
CREATE INDEX serve_batches_unposted ON serve_batches(id) WHERE posted_at IS NULL;

-- Per-key limits on calls (0: the default). The key's own daily budget
-- (api_keys, accounts/) also binds.
CREATE TABLE serve_key_limits (
    key_id              INTEGER PRIMARY KEY,
    user_id             INTEGER NOT NULL,
    requests_per_min    INTEGER NOT NULL DEFAULT 0,
    concurrency         INTEGER NOT NULL DEFAULT 0,
    daily_budget_mcoins INTEGER NOT NULL DEFAULT -1,   -- -1: none beyond the key's
    updated_at          INTEGER NOT NULL
);
