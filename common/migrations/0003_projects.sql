-- Projects: one row per git repository at DATA/projects/<id>/ (projects/).
-- Ids are "p" + 12 random base62 characters so they cannot be enumerated.
CREATE TABLE projects (
    id          TEXT PRIMARY KEY,
    owner_id    INTEGER NOT NULL REFERENCES users(id),
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    visibility  TEXT NOT NULL CHECK (visibility IN ('private', 'public')),
    forked_from TEXT,                    -- source project id; no FK: the source may be deleted
    size_bytes  INTEGER NOT NULL DEFAULT 0, -- working tree + objects, against the owner's limit
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
-- "mine + public, newest first" and per-owner storage sums.
CREATE INDEX projects_owner ON projects(owner_id, created_at);
CREATE INDEX projects_public ON projects(visibility, created_at);
