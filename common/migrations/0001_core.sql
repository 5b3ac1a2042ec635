-- Core tables every module may use.
-- Times are integer milliseconds since the epoch (UTC); money is integer mcoins.

-- Operator settings that admins change at run time (signup_open, ...).
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

-- Append-only audit trail: logins, key changes, role and tier changes, admin actions.
CREATE TABLE audit (
    id         INTEGER PRIMARY KEY,
    at         INTEGER NOT NULL,
    actor_id   INTEGER,            -- user who acted (NULL: the system or anonymous)
    action     TEXT NOT NULL,      -- "auth.login", "key.create", "user.set_role", ...
    target     TEXT,               -- what it acted on ("user:12", "key:5")
    ip         TEXT,
    request_id TEXT,
    detail     TEXT                -- JSON object with specifics
);
CREATE INDEX audit_at ON audit(at);
