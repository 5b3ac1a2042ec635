-- Jupyter Server sessions (/api/sessions, gateway/jupyter_routes.c): a
-- notebook path bound to a kernel. Kept in the store so that they survive a
-- server restart and cost the gateway no memory. The kernel hub deletes a
-- kernel's sessions when the kernel is shut down, and with the kernel's
-- journal once it has been dead for kernel_journal_retention_ms.
-- Times are integer milliseconds since the epoch (UTC).
CREATE TABLE jupyter_sessions (
    id          TEXT PRIMARY KEY,                          -- UUID
    user_id     INTEGER NOT NULL REFERENCES users(id),
    kernel_id   TEXT NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
    path        TEXT NOT NULL,                             -- at most 4096 bytes (checked by the API)
    name        TEXT NOT NULL,
    type        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX jupyter_sessions_user ON jupyter_sessions(user_id, path);
CREATE INDEX jupyter_sessions_kernel ON jupyter_sessions(kernel_id);
