-- Tiers, and the double-entry A-coin ledger (quota/).
-- Money is integer milli-coins (1 A-coin = 1000 mcoins); time integer ms.

CREATE TABLE tiers (
    name               TEXT PRIMARY KEY,
    max_kernels        INTEGER NOT NULL,
    max_gpus_per_job   INTEGER NOT NULL,
    max_session_ms     INTEGER NOT NULL,
    idle_timeout_ms    INTEGER NOT NULL,
    weight             INTEGER NOT NULL,      -- scheduling weight
    allow_egress       INTEGER NOT NULL,
    overdraft_mcoins   INTEGER NOT NULL,      -- how far below zero coins may go
    free_gpu_ms_per_day INTEGER NOT NULL,     -- daily free allowance on the entry GPU class
    updated_at         INTEGER NOT NULL
);
INSERT INTO tiers VALUES
    ('free',    1, 1,  43200000, 3600000, 1, 0, 0, 28800000, 0),
    ('pro',     3, 2,  86400000, 7200000, 2, 1, 0, 28800000, 0),
    ('premium', 6, 8, 172800000, 14400000, 4, 1, 0, 28800000, 0);

-- One row per ledger account. balance_mcoins is materialised: it always equals
-- the sum of the account's entries (checked by quota_verify).
CREATE TABLE ledger_accounts (
    id             INTEGER PRIMARY KEY,
    kind           TEXT NOT NULL,           -- user_coins | user_held | system_grants | system_revenue | system_refunds
    user_id        INTEGER REFERENCES users(id),
    balance_mcoins INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL
);
CREATE UNIQUE INDEX ledger_accounts_kind_user ON ledger_accounts(kind, IFNULL(user_id, 0));
INSERT INTO ledger_accounts(kind, user_id, balance_mcoins, created_at) VALUES
    ('system_grants', NULL, 0, 0), ('system_revenue', NULL, 0, 0), ('system_refunds', NULL, 0, 0);

-- A transfer moves money between accounts; its entries sum to zero.
CREATE TABLE ledger_transfers (
    id           INTEGER PRIMARY KEY,
    at           INTEGER NOT NULL,
    kind         TEXT NOT NULL,             -- grant | charge | refund | hold | release | purchase
    idem_key     TEXT NOT NULL UNIQUE,
    request_hash TEXT NOT NULL,             -- what was asked, to refuse a reused key with another body
    ref          TEXT,                      -- "job:12", "kernel:k3", "hold:5"
    reason       TEXT,
    actor_id     INTEGER
);

CREATE TABLE ledger_entries (
    id                   INTEGER PRIMARY KEY,
    transfer_id          INTEGER NOT NULL REFERENCES ledger_transfers(id),
    account_id           INTEGER NOT NULL REFERENCES ledger_accounts(id),
    amount_mcoins        INTEGER NOT NULL,
    balance_after_mcoins INTEGER NOT NULL
);
CREATE INDEX ledger_entries_account ON ledger_entries(account_id, id);
CREATE INDEX ledger_entries_transfer ON ledger_entries(transfer_id);

-- Reservations against a user's coins: opened, then resolved exactly once.
CREATE TABLE ledger_holds (
    id              INTEGER PRIMARY KEY,
    user_id         INTEGER NOT NULL REFERENCES users(id),
    amount_mcoins   INTEGER NOT NULL,       -- reserved
    settled_mcoins  INTEGER,                -- charged at settle (NULL while open)
    status          TEXT NOT NULL,          -- open | settled
    ref             TEXT,
    open_transfer   INTEGER NOT NULL REFERENCES ledger_transfers(id),
    created_at      INTEGER NOT NULL,
    resolved_at     INTEGER
);
CREATE INDEX ledger_holds_open ON ledger_holds(user_id, status);

-- The journal is append-only.
CREATE TRIGGER ledger_entries_no_update BEFORE UPDATE ON ledger_entries
    BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries
    BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
CREATE TRIGGER ledger_transfers_no_update BEFORE UPDATE ON ledger_transfers
    BEGIN SELECT RAISE(ABORT, 'ledger transfers are append-only'); END;
CREATE TRIGGER ledger_transfers_no_delete BEFORE DELETE ON ledger_transfers
    BEGIN SELECT RAISE(ABORT, 'ledger transfers are append-only'); END;
