-- Jobs with several ranks, and the executor that runs a job
-- (scheduler/README.md "Ranks" and "Executor slurm").
--   ranks    how many processes the job starts (CPU classes: `ranks`, one
--            slot each; GPU classes: nodes * gpus_per_node, one GPU each)
--   nodes    how many hosts they span (the local executor: always 1)
--   executor which backend ran the current attempt: 'local' | 'slurm'
--   exec_ref that backend's handle for it (Slurm's job id), so a restarted
--            server re-attaches to work that went on without it
ALTER TABLE jobs ADD COLUMN ranks INTEGER NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN nodes INTEGER NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN executor TEXT;
ALTER TABLE jobs ADD COLUMN exec_ref TEXT;
-- Where the current attempt's metering began (service.c start_job), so a
-- re-attached attempt meters and settles exactly as if the server had never
-- stopped: meter intervals before it, the meter's charged and unpaid totals
-- then, and jobs.charged_mcoins then.
ALTER TABLE jobs ADD COLUMN attempt_seq_base INTEGER;
ALTER TABLE jobs ADD COLUMN attempt_charged_base INTEGER;
ALTER TABLE jobs ADD COLUMN attempt_unpaid_base INTEGER;
ALTER TABLE jobs ADD COLUMN attempt_prior_charged INTEGER;
