-- Accounts, browser sessions and API keys (gateway/accounts.c, sessions.c, keys.c).
-- Times are integer milliseconds since the epoch (UTC); money is integer mcoins.

CREATE TABLE users (
    id            INTEGER PRIMARY KEY,
    username      TEXT NOT NULL UNIQUE,            -- [a-z][a-z0-9_-]{2,31}
    email         TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash TEXT NOT NULL,                   -- libsodium crypto_pwhash_str (Argon2id)
    role          TEXT NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin')),
    tier          TEXT NOT NULL DEFAULT 'free',    -- validated by gw__tier_check
    suspended     INTEGER NOT NULL DEFAULT 0 CHECK (suspended IN (0, 1)),
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

-- One row per browser login. The cookie holds the token; only its SHA-256 is kept.
CREATE TABLE sessions (
    id           INTEGER PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_sha256 TEXT NOT NULL UNIQUE,             -- hex SHA-256 of the cookie value
    csrf_token   TEXT NOT NULL,                    -- sent back as X-CSRF-Token
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    ip           TEXT
);
CREATE INDEX sessions_user ON sessions(user_id);

-- API keys: eddy_<env>_<random>_<checksum>; shown once, only the SHA-256 is kept.
CREATE TABLE api_keys (
    id                  INTEGER PRIMARY KEY,
    user_id             INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    env                 TEXT NOT NULL CHECK (env IN ('dev', 'test', 'prod')),
    prefix              TEXT NOT NULL,             -- "eddy_dev_AbCdEfGhIjKl" for display
    key_sha256          TEXT NOT NULL UNIQUE,      -- hex SHA-256 of the whole key
    scopes              TEXT NOT NULL,             -- "read,write,run,serve,admin" subset
    daily_budget_mcoins INTEGER,                   -- NULL: no cap (enforced by quota/)
    rate_limit_per_min  INTEGER,                   -- NULL: the server default
    created_at          INTEGER NOT NULL,
    expires_at          INTEGER,                   -- NULL: never
    revoked_at          INTEGER,                   -- NULL: active
    last_used_at        INTEGER                    -- updated at most once a minute
);
CREATE INDEX api_keys_user ON api_keys(user_id);
