-- Interactive kernels (gateway/kernel_hub.c). A kernel is a scheduler job of
-- kind 'kernel' (jobs.job_id: its current process; a restart starts a new job
-- under the same kernel id). Every message a kernel emits is journaled with
-- a per-kernel sequence number before clients see it.
CREATE TABLE kernels (
    id               TEXT PRIMARY KEY,               -- UUID, as Jupyter shows it
    user_id          INTEGER NOT NULL REFERENCES users(id),
    project_id       TEXT NOT NULL,
    resource         TEXT NOT NULL,
    job_id           INTEGER,                        -- current process's job
    status           TEXT NOT NULL,                  -- queued | starting | idle | busy | dead
    stop_reason      TEXT,                           -- why it died (NULL while alive)
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    last_activity_at INTEGER NOT NULL,
    ended_at         INTEGER
);
CREATE INDEX kernels_user ON kernels(user_id, created_at);
CREATE INDEX kernels_job ON kernels(job_id);

CREATE TABLE kernel_journal (
    kernel_id  TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    at         INTEGER NOT NULL,                     -- ms
    msg        TEXT NOT NULL,                        -- the Jupyter message, JSON
    PRIMARY KEY (kernel_id, seq)
) WITHOUT ROWID;
