-- Previews of dataset files (datasets/preview.c): computed once per blob by
-- the preview worker, off the request path, and kept as the JSON the API
-- answers ({kind: "table"|"image"|"text"|"json"|"none", ...}). Keyed by the
-- blob's sha256, so the same bytes in any version or dataset are previewed
-- once; the row goes with its blob when gc deletes it.
CREATE TABLE dataset_previews (
    sha256      TEXT PRIMARY KEY REFERENCES dataset_blobs(sha256) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('table', 'image', 'text', 'json', 'none')),
    json        TEXT NOT NULL,                  -- the preview object, compact JSON
    error       TEXT,                           -- why it is kind 'none' when a decoder failed; NULL otherwise
    computed_at INTEGER NOT NULL                -- ms
) WITHOUT ROWID;
