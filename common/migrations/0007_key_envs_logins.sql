-- API key environments and login addresses (accounts/: accounts.c, keys.c).
-- Times are integer milliseconds since the epoch (UTC); money is integer mcoins.

-- Each API key carries an env label (dev, test, prod). Per tier, each env has
-- its own caps: a key's own daily_budget_mcoins / rate_limit_per_min are
-- capped by its env's here. An env with no row for a tier has no caps.
CREATE TABLE tier_key_envs (
    tier                TEXT NOT NULL REFERENCES tiers(name),
    env                 TEXT NOT NULL CHECK (env IN ('dev', 'test', 'prod')),
    daily_budget_mcoins INTEGER NOT NULL DEFAULT -1,  -- -1: no cap
    rate_limit_per_min  INTEGER NOT NULL DEFAULT 0,   -- 0: no cap (the key's own or the server default)
    updated_at          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tier, env)
);
INSERT INTO tier_key_envs(tier, env)
    SELECT t.name, e.env FROM tiers t,
        (SELECT 'dev' AS env UNION ALL SELECT 'test' UNION ALL SELECT 'prod') e;

-- Addresses a user recently logged in from with the right password. The login
-- limiter lets these past an account-wide lock, so that failures from
-- elsewhere cannot lock the owner out (gateway/README.md "Rate limits").
CREATE TABLE login_addresses (
    user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    ip              TEXT NOT NULL,
    last_success_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, ip)
);
