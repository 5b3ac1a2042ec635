-- Per-job flags for work the platform starts on a user's behalf (code
-- competition runs; scheduler/README.md "Platform runs"), the mounts such a
-- job is given instead of its project's datasets, and a code competition's
-- hidden test inputs (competitions/README.md "Code competitions").
--   network_off  the job gets its own network namespace with loopback only,
--                whatever the owner's tier allows (tiers.allow_egress)
--   uncharged    never charged nor reserved: no funds check at submit, no
--                hold, no meter charge, no free allowance used
--   internal     the platform's: its owner never lists nor reads it (GET
--                /api/v1/jobs is 404); only the component that started it
--                reads it (user 0), and acknowledges it (collected) once it
--                has handled the outcome, so a restart finds what it has not
--   fixed_mounts the job mounts the rows of job_datasets written at submit
--                (with their trees), never its project's datasets
ALTER TABLE jobs ADD COLUMN network_off INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN uncharged INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN internal INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN collected INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN fixed_mounts INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_uncollected ON jobs(id) WHERE internal = 1 AND collected = 0;
-- The host's tree of a fixed mount ("" for the project's datasets, which are
-- resolved again at start).
ALTER TABLE job_datasets ADD COLUMN tree TEXT NOT NULL DEFAULT '';
-- A code competition's hidden test inputs: a dataset version of the host's,
-- mounted read-only into each run (never the ground truth); NULL: none.
ALTER TABLE competitions ADD COLUMN code_inputs_dataset_id TEXT;
ALTER TABLE competitions ADD COLUMN code_inputs_version INTEGER NOT NULL DEFAULT 0;
