-- Workspace quota (projects/root.c, sandbox/sbx_disk.c): a per-tier limit on
-- what one project's working tree (the kernel's /home/aistudio/work) holds,
-- enforced by a disk-quota tree, and which tree each project has.

-- bytes one project's working tree (files + .git) may hold; 0: no limit.
-- AI Studio gives every user a fixed work directory; these are the defaults
-- an operator changes with PUT /api/v1/admin/tiers/{name} {workspace_bytes}.
ALTER TABLE tiers ADD COLUMN workspace_bytes INTEGER NOT NULL DEFAULT 2147483648;   -- free: 2 GiB
UPDATE tiers SET workspace_bytes = 10737418240 WHERE name = 'pro';                  -- 10 GiB
UPDATE tiers SET workspace_bytes = 53687091200 WHERE name = 'premium';              -- 50 GiB

-- A project's workspace tree: disk project id SBX_DISK_PROJID_PROJECTS +
-- disk_id (AUTOINCREMENT: never reused). The row is written before the tree
-- is made and deleted after it is removed, so a row whose project does not
-- exist is what a crash left (removed at the next start). A project without
-- a row predates this migration (a plain directory until it is converted).
CREATE TABLE workspaces (
    disk_id     INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id  TEXT NOT NULL UNIQUE,
    limit_bytes INTEGER NOT NULL DEFAULT 0,  -- the limit its tree was given; 0: a plain directory
    created_at  INTEGER NOT NULL
);
