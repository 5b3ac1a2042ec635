-- Scheduler (scheduler/) and metering (quota/meter.c): resource classes,
-- per-tier free allowances, jobs (the persistent queue), the free-allowance
-- counter and the meter journal. Money integer mcoins; time integer ms (UTC).

-- Resource classes. capacity is in units: GPUs for a GPU class, concurrent
-- slots for a CPU class. configured_capacity -1 means "discover" (GPU count
-- from NVML / the CUDA driver when present, else 0); simulated devices count
-- as capacity without device nodes (tests on CPU hosts).
CREATE TABLE sched_resources (
    name                  TEXT PRIMARY KEY,
    cpus                  INTEGER NOT NULL,
    memory_mb             INTEGER NOT NULL,
    gpu                   INTEGER NOT NULL,     -- 1: a GPU class (units are GPUs)
    gpu_model             TEXT NOT NULL DEFAULT '',
    price_mcoins_per_hour INTEGER NOT NULL,     -- per unit
    configured_capacity   INTEGER NOT NULL,     -- -1: discover
    simulated             INTEGER NOT NULL DEFAULT 0,
    tiers                 TEXT NOT NULL,        -- comma-separated tiers allowed
    entry_gpu             INTEGER NOT NULL DEFAULT 0, -- the class tiers.free_gpu_ms_per_day applies to
    updated_at            INTEGER NOT NULL
);
INSERT INTO sched_resources VALUES
    ('cpu-basic',    2,  4096, 0, '',          100, 4, 0, 'free,pro,premium', 0, 0),
    ('gpu-v100-16g', 4, 16384, 1, 'V100 16GB', 2000, -1, 0, 'free,pro,premium', 1, 0),
    ('gpu-a100-40g', 8, 32768, 1, 'A100 40GB', 8000, -1, 0, 'pro,premium', 0, 0);

-- Daily free allowance per tier and class (ms of run time, -1 unlimited).
-- A class with no row: the entry GPU class uses tiers.free_gpu_ms_per_day,
-- others have none.
CREATE TABLE sched_allowances (
    tier        TEXT NOT NULL REFERENCES tiers(name),
    resource    TEXT NOT NULL,
    free_ms_per_day INTEGER NOT NULL,
    PRIMARY KEY (tier, resource)
);
INSERT INTO sched_allowances VALUES
    ('free', 'cpu-basic', -1), ('pro', 'cpu-basic', -1), ('premium', 'cpu-basic', -1);

-- Batch jobs (and later interactive kernels): one row each. The rows with
-- status 'queued' are the queue; it survives restarts with the database.
CREATE TABLE jobs (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL DEFAULT 'job',   -- job | kernel
    user_id         INTEGER NOT NULL REFERENCES users(id),
    project_id      TEXT NOT NULL,
    version         TEXT,
    entry           TEXT NOT NULL,
    args            TEXT NOT NULL DEFAULT '[]',    -- JSON array of strings
    resource        TEXT NOT NULL,
    gpus            INTEGER NOT NULL DEFAULT 0,
    units           INTEGER NOT NULL,              -- capacity units taken
    max_runtime_ms  INTEGER NOT NULL,
    preemptible     INTEGER NOT NULL DEFAULT 1,
    requeue         INTEGER NOT NULL DEFAULT 0,
    status          TEXT NOT NULL,   -- queued | running | succeeded | failed | cancelled | preempted
    failure_reason  TEXT,            -- user_error | timeout | out_of_memory | out_of_funds | preempted | cancelled | platform_error
    exit_code       INTEGER,
    created_at      INTEGER NOT NULL,
    enqueued_at     INTEGER NOT NULL,
    started_at      INTEGER,
    ended_at        INTEGER,
    attempt         INTEGER NOT NULL DEFAULT 0,
    hold_id         INTEGER,
    charged_mcoins  INTEGER NOT NULL DEFAULT 0,
    metered_seq     INTEGER NOT NULL DEFAULT 0,    -- intervals metered in this attempt
    warned_at       INTEGER,                       -- out-of-funds warning given
    stop_reason     TEXT,                          -- why the scheduler is stopping it
    stop_at         INTEGER,                       -- SIGKILL after this (ms)
    cpu_ms          INTEGER,
    peak_mem_bytes  INTEGER,
    devices         TEXT,
    idem_key        TEXT
);
CREATE INDEX jobs_status ON jobs(status);
CREATE INDEX jobs_user ON jobs(user_id, id);
CREATE UNIQUE INDEX jobs_idem ON jobs(user_id, idem_key) WHERE idem_key IS NOT NULL;

-- Daily free allowance used, per user, class and UTC day (ms at 00:00).
CREATE TABLE quota_free_usage (
    user_id  INTEGER NOT NULL,
    resource TEXT NOT NULL,
    day      INTEGER NOT NULL,
    used_ms  INTEGER NOT NULL,
    PRIMARY KEY (user_id, resource, day)
);

-- One row per metered interval of a piece of work (ref "job:12", seq 1..).
-- status: pending (decided, charge not yet confirmed) | charged | free |
-- unpaid (out of funds) | refunded (charged, then given back after a platform
-- failure) | voided (free or unpaid, then given back after a platform failure).
CREATE TABLE quota_meter (
    id          INTEGER PRIMARY KEY,
    ref         TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    user_id     INTEGER NOT NULL,
    resource    TEXT NOT NULL,
    day         INTEGER NOT NULL,
    ms          INTEGER NOT NULL,
    free_ms     INTEGER NOT NULL,
    paid_ms     INTEGER NOT NULL,
    mcoins      INTEGER NOT NULL,
    status      TEXT NOT NULL,
    transfer_id INTEGER,
    at          INTEGER NOT NULL,
    UNIQUE (ref, seq)
);
CREATE INDEX quota_meter_status ON quota_meter(status);
