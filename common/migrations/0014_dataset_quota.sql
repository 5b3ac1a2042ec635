-- Dataset quota (datasets/, gateway/datasets_routes.c) and the hash state of
-- resumable uploads (below). The quota: a per-tier limit on
-- the bytes one user's datasets store: the distinct blobs of their versions
-- and drafts (ds_usage_bytes; a blob used twice counts once). Checked when a
-- file goes into a draft (ds_draft_put_fd, ds_upload_open: 402 past it).

-- 0: no limit. The defaults an operator changes with
-- PUT /api/v1/admin/tiers/{name} {dataset_bytes}.
ALTER TABLE tiers ADD COLUMN dataset_bytes INTEGER NOT NULL DEFAULT 21474836480;   -- free: 20 GiB
UPDATE tiers SET dataset_bytes = 107374182400 WHERE name = 'pro';                  -- 100 GiB
UPDATE tiers SET dataset_bytes = 536870912000 WHERE name = 'premium';              -- 500 GiB

-- A resumable upload's sha256 state (datasets/uploads.c): the hash of its
-- first durable_offset bytes, saved with the offset in the same UPDATE, so
-- finishing an upload never reads it again. NULL: rebuilt from the file.
ALTER TABLE dataset_uploads ADD COLUMN hash_state BLOB;
