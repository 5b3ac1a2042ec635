-- The datasets a job or kernel mounts (scheduler/mounts.c): one row per
-- mount, in the order the project lists them. Written when the job is
-- submitted (what it would mount: a queued job keeps the versions it names
-- from being deleted) and replaced when it starts ("latest" resolved then);
-- after the start the rows never change, so a job record keeps the exact
-- versions it ran with, also after the dataset or version is deleted (no
-- foreign key to datasets on purpose; name is kept for that reason).
-- A table rather than a JSON column on jobs: the datasets' in-use hook asks
-- "which queued or running job mounts version n of dataset d" through the
-- index, without parsing every running job's JSON.
CREATE TABLE job_datasets (
    job_id      INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    pos         INTEGER NOT NULL,                -- 0-based, the project's order
    dataset_id  TEXT NOT NULL,
    name        TEXT NOT NULL,                   -- "owner/slug" when it started
    version     INTEGER NOT NULL,                -- the number it ran with
    path        TEXT NOT NULL,                   -- inside: /home/aistudio/data/<owner>-<slug>
    PRIMARY KEY (job_id, pos)
) WITHOUT ROWID;
CREATE INDEX job_datasets_dataset ON job_datasets(dataset_id, version);
