-- Competitions (competitions/, comp.h): hosts, competitions with their
-- timeline and settings, rules acceptance, teams, invitations, submissions
-- counted against caps, and the maintained best-per-team public board.
-- The ground truth is a file (DATA/competitions/<id>/truth.csv, 0400), never
-- a column: nothing here holds it.

-- Users an admin made hosts (admins are hosts without a row).
CREATE TABLE comp_hosts (
    user_id    INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    added_by   INTEGER NOT NULL,
    added_at   INTEGER NOT NULL
);

CREATE TABLE competitions (
    id                  TEXT PRIMARY KEY,               -- uuid
    host_id             INTEGER NOT NULL REFERENCES users(id),
    title               TEXT NOT NULL,
    slug                TEXT NOT NULL UNIQUE COLLATE NOCASE,
    overview            TEXT NOT NULL DEFAULT '',
    rules               TEXT NOT NULL DEFAULT '',
    start_at            INTEGER NOT NULL,               -- ms UTC
    end_at              INTEGER NOT NULL,
    merge_deadline      INTEGER NOT NULL,
    selection_deadline  INTEGER NOT NULL,
    dataset_id          TEXT,                           -- public data (datasets/), NULL: none yet
    dataset_version     INTEGER NOT NULL DEFAULT 0,
    id_column           TEXT NOT NULL,
    target_columns      TEXT NOT NULL,                  -- JSON array of strings
    metric              TEXT NOT NULL,
    k                   INTEGER NOT NULL DEFAULT 0,
    higher_is_better    INTEGER NOT NULL CHECK (higher_is_better IN (0, 1)),
    public_fraction     REAL NOT NULL CHECK (public_fraction >= 0 AND public_fraction <= 1),
    daily_cap           INTEGER NOT NULL CHECK (daily_cap >= 1),
    total_cap           INTEGER NOT NULL DEFAULT 0,     -- 0: none
    invalid_counts      INTEGER NOT NULL DEFAULT 0 CHECK (invalid_counts IN (0, 1)),
    max_team_size       INTEGER NOT NULL CHECK (max_team_size >= 1),
    selection_max       INTEGER NOT NULL CHECK (selection_max >= 1),
    mode                TEXT NOT NULL CHECK (mode IN ('public', 'own_score', 'hidden')),
    code_enabled        INTEGER NOT NULL DEFAULT 0 CHECK (code_enabled IN (0, 1)),
    code_resource       TEXT,
    code_output_path    TEXT,
    code_max_runtime_s  INTEGER NOT NULL DEFAULT 0,
    code_charged        INTEGER NOT NULL DEFAULT 0 CHECK (code_charged IN (0, 1)),
    split_seed          INTEGER NOT NULL,               -- drawn once at create; the public/private split
    truth_rows          INTEGER NOT NULL DEFAULT 0,     -- 0: no truth stored yet
    truth_token         TEXT,                           -- changes with every put (the scorer's cache key)
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
);
CREATE INDEX competitions_start ON competitions(start_at DESC);

CREATE TABLE comp_rules_accepted (
    comp_id     TEXT NOT NULL REFERENCES competitions(id) ON DELETE CASCADE,
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    accepted_at INTEGER NOT NULL,
    PRIMARY KEY (comp_id, user_id)
) WITHOUT ROWID;

CREATE TABLE comp_teams (
    id               INTEGER PRIMARY KEY,
    comp_id          TEXT NOT NULL REFERENCES competitions(id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    merge_request_to INTEGER,                           -- a team this one asked to merge with
    created_at       INTEGER NOT NULL,
    UNIQUE (comp_id, name)
);

-- The primary key is the rule "a user is in at most one team per competition".
CREATE TABLE comp_team_members (
    comp_id   TEXT NOT NULL REFERENCES competitions(id) ON DELETE CASCADE,
    user_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    team_id   INTEGER NOT NULL REFERENCES comp_teams(id) ON DELETE CASCADE,
    joined_at INTEGER NOT NULL,
    PRIMARY KEY (comp_id, user_id)
) WITHOUT ROWID;
CREATE INDEX comp_team_members_team ON comp_team_members(team_id);

CREATE TABLE comp_invites (
    team_id    INTEGER NOT NULL REFERENCES comp_teams(id) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    invited_by INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (team_id, user_id)
) WITHOUT ROWID;

-- status: queued -> validating -> scoring -> scored | invalid | failed
-- (code: queued -> running -> scoring -> ...). state_deadline is when the
-- watchdog takes an in-flight row (0 in a final state); attempt changes on
-- every claim and requeue so a stale worker's result is dropped.
CREATE TABLE comp_submissions (
    id             TEXT PRIMARY KEY,                    -- uuid
    comp_id        TEXT NOT NULL REFERENCES competitions(id) ON DELETE CASCADE,
    team_id        INTEGER NOT NULL REFERENCES comp_teams(id),
    user_id        INTEGER NOT NULL REFERENCES users(id),
    created_at     INTEGER NOT NULL,                    -- ms
    day_start      INTEGER NOT NULL,                    -- 00:00 UTC of created_at (daily cap)
    kind           TEXT NOT NULL CHECK (kind IN ('csv', 'code')),
    source         TEXT,                                -- code: the JSON the runner runs
    status         TEXT NOT NULL CHECK (status IN ('queued', 'validating', 'running', 'scoring',
                                                   'scored', 'invalid', 'failed')),
    error_class    TEXT,
    error_message  TEXT,
    log_tail       TEXT,
    public_score   REAL,
    private_score  REAL,                                -- read only by the private board/getter
    metric_version INTEGER NOT NULL DEFAULT 0,
    counted        INTEGER NOT NULL CHECK (counted IN (0, 1)),
    selected       INTEGER NOT NULL DEFAULT 0 CHECK (selected IN (0, 1)),
    state_deadline INTEGER NOT NULL DEFAULT 0,
    retries        INTEGER NOT NULL DEFAULT 0,
    attempt        INTEGER NOT NULL DEFAULT 0,
    charged_mcoins INTEGER NOT NULL DEFAULT 0,
    refund_key     TEXT,                                -- set when a refund is owed
    refund_state   INTEGER NOT NULL DEFAULT 0           -- 0 none, 1 pending, 2 paid
);
CREATE INDEX comp_submissions_team ON comp_submissions(team_id, created_at);
CREATE INDEX comp_submissions_cap ON comp_submissions(team_id, counted, day_start);
CREATE INDEX comp_submissions_queue ON comp_submissions(status, kind, created_at);
CREATE INDEX comp_submissions_deadline ON comp_submissions(state_deadline)
    WHERE state_deadline > 0;
CREATE INDEX comp_submissions_comp ON comp_submissions(comp_id, created_at);
CREATE INDEX comp_submissions_refund ON comp_submissions(refund_state) WHERE refund_state = 1;

-- The public board, maintained: each team's best public score, rank_key
-- ascending is best first (the score, negated when higher is better).
CREATE TABLE comp_team_best (
    team_id       INTEGER PRIMARY KEY REFERENCES comp_teams(id) ON DELETE CASCADE,
    comp_id       TEXT NOT NULL REFERENCES competitions(id) ON DELETE CASCADE,
    rank_key      REAL NOT NULL,
    score         REAL NOT NULL,
    created_at    INTEGER NOT NULL,
    submission_id TEXT NOT NULL
);
CREATE INDEX comp_team_best_rank ON comp_team_best(comp_id, rank_key, created_at, team_id);

-- The private board, computed once after end_at (from the selections).
CREATE TABLE comp_private_best (
    team_id       INTEGER PRIMARY KEY REFERENCES comp_teams(id) ON DELETE CASCADE,
    comp_id       TEXT NOT NULL REFERENCES competitions(id) ON DELETE CASCADE,
    rank_key      REAL NOT NULL,
    score         REAL NOT NULL,
    created_at    INTEGER NOT NULL,
    submission_id TEXT NOT NULL
);
CREATE INDEX comp_private_best_rank ON comp_private_best(comp_id, rank_key, created_at, team_id);
CREATE TABLE comp_private_done (
    comp_id     TEXT PRIMARY KEY REFERENCES competitions(id) ON DELETE CASCADE,
    computed_at INTEGER NOT NULL
);
