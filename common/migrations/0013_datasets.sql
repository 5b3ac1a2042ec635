-- Datasets (datasets/): datasets with shares, a content-addressed blob store
-- (DATA/datasets/blobs/ab/<sha256>), immutable versions, the draft a version
-- is published from, resumable uploads, and the datasets a project mounts.
-- Every table here is datasets/'s; nothing else runs SQL on them.

-- A dataset. `id` is a random uuid (cannot be enumerated); `slug` names it in
-- URLs and in the mount /home/aistudio/data/<owner>-<slug>/, unique per owner
-- whatever its case ([A-Za-z0-9._-], checked by ds_slug_validate).
CREATE TABLE datasets (
    id          TEXT PRIMARY KEY,
    owner_id    INTEGER NOT NULL REFERENCES users(id),
    slug        TEXT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',       -- the card, Markdown
    license     TEXT NOT NULL DEFAULT '',       -- an SPDX id or free text
    tags        TEXT NOT NULL DEFAULT '[]',     -- JSON array of strings
    visibility  TEXT NOT NULL CHECK (visibility IN ('private', 'unlisted', 'public')),
    version_seq INTEGER NOT NULL DEFAULT 0,     -- highest version number ever published: a deleted
                                                -- version's number is never given again
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX datasets_owner_slug ON datasets(owner_id, slug COLLATE NOCASE);
CREATE INDEX datasets_public ON datasets(visibility, updated_at);

-- Who else may read (and mount) a private dataset. Read only: writes stay the
-- owner's.
CREATE TABLE dataset_shares (
    dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (dataset_id, user_id)
);
CREATE INDEX dataset_shares_user ON dataset_shares(user_id);

-- One stored file per distinct content. A blob is live while a row of
-- dataset_files or dataset_draft_files names it (a query, never a counter
-- that can drift); gc deletes dead rows in a transaction, then their files.
-- The row is written after the file is in place, so a file without a row is
-- what a crash left (removed at the next start).
CREATE TABLE dataset_blobs (
    sha256     TEXT PRIMARY KEY,               -- 64 lowercase hex
    size       INTEGER NOT NULL,               -- bytes
    media_type TEXT NOT NULL,                  -- guessed from the first path it came with
    created_at INTEGER NOT NULL
);

-- An immutable published version: number n counts from 1 per dataset.
CREATE TABLE dataset_versions (
    dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    number     INTEGER NOT NULL,
    message    TEXT NOT NULL DEFAULT '',
    size_bytes INTEGER NOT NULL,               -- sum of its files' sizes (not deduplicated)
    file_count INTEGER NOT NULL,
    created_by INTEGER NOT NULL,               -- user id; no FK: kept when the user goes
    created_at INTEGER NOT NULL,
    source     TEXT,                           -- JSON, {"job_id":..} / {"project_id":..}; NULL: uploads
    PRIMARY KEY (dataset_id, number)
);

-- A version's manifest: written in the transaction that creates the version.
CREATE TABLE dataset_files (
    dataset_id TEXT NOT NULL,
    number     INTEGER NOT NULL,
    path       TEXT NOT NULL,                  -- relative, '/'-separated, ds_path_validate
    sha256     TEXT NOT NULL REFERENCES dataset_blobs(sha256),
    size       INTEGER NOT NULL,
    media_type TEXT NOT NULL,
    PRIMARY KEY (dataset_id, number, path),
    FOREIGN KEY (dataset_id, number) REFERENCES dataset_versions(dataset_id, number) ON DELETE CASCADE
);
CREATE INDEX dataset_files_sha256 ON dataset_files(sha256);

-- The working set the next version is published from. It starts empty and
-- stays as the last published version's files after a publish, so a new
-- version that changes one file of 10,000 uploads one file.
CREATE TABLE dataset_draft_files (
    dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    sha256     TEXT NOT NULL REFERENCES dataset_blobs(sha256),
    size       INTEGER NOT NULL,
    media_type TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (dataset_id, path)
);
CREATE INDEX dataset_draft_files_sha256 ON dataset_draft_files(sha256);

-- A resumable upload: its bytes are at DATA/datasets/uploads/<id>. `durable_offset`
-- is what is durable (fdatasync'd before it is written here); bytes past it
-- are cut off when the next chunk begins. Expired by gc after the server's
-- upload_ttl without a chunk.
CREATE TABLE dataset_uploads (
    id         TEXT PRIMARY KEY,               -- uuid
    dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL,
    path       TEXT NOT NULL,                  -- where it lands in the draft
    size       INTEGER NOT NULL,               -- declared total bytes
    sha256     TEXT NOT NULL,                  -- declared, checked when complete
    durable_offset INTEGER NOT NULL DEFAULT 0, -- bytes fdatasync'd; the next chunk must start here
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX dataset_uploads_dataset ON dataset_uploads(dataset_id);

-- The datasets a project mounts (read-only at /home/aistudio/data/<owner>-<slug>/).
-- version NULL: the latest, resolved when a kernel or job starts.
CREATE TABLE project_datasets (
    project_id TEXT NOT NULL,                  -- no FK: projects/ owns projects and deletes rows through ds_
    dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    version    INTEGER,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, dataset_id)
);
CREATE INDEX project_datasets_dataset ON project_datasets(dataset_id);
