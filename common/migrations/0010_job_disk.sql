-- Job disk (scheduler/retention.c, sandbox/sbx_disk.c): a per-tier limit on
-- what a job writes into its work and output directories, enforced by disk
-- quotas; and the fate of finished jobs' directories.

-- bytes a job (or kernel) may write into its work + output directories; 0: no limit
ALTER TABLE tiers ADD COLUMN job_disk_bytes INTEGER NOT NULL DEFAULT 1073741824;
UPDATE tiers SET job_disk_bytes = 5368709120 WHERE name = 'pro';
UPDATE tiers SET job_disk_bytes = 21474836480 WHERE name = 'premium';

ALTER TABLE jobs ADD COLUMN disk_limit_bytes INTEGER;       -- the limit it ran under; NULL: none
ALTER TABLE jobs ADD COLUMN disk_used_bytes INTEGER;        -- work + output when it ended; NULL before
ALTER TABLE jobs ADD COLUMN artifacts_expired_at INTEGER;   -- ms: retention deleted its directory
CREATE INDEX jobs_retention ON jobs(ended_at) WHERE artifacts_expired_at IS NULL AND ended_at IS NOT NULL;
