-- Custom scoring programs (competitions/README.md "Custom scoring programs").
--   scorer_direction  NULL: the built-in metric scores; 'higher' | 'lower':
--                     a host's program scores, and this is its direction
--                     (competitions.higher_is_better follows it)
--   scorer_token      NULL: no program stored (DATA/competitions/<id>/scorer.py);
--                     changes with every put
--   scorer_timeout_s  wall time of one run (public rows, then private rows)
--   scorer_memory_mb  memory limit of one run
ALTER TABLE competitions ADD COLUMN scorer_direction TEXT
    CHECK (scorer_direction IS NULL OR scorer_direction IN ('higher', 'lower'));
ALTER TABLE competitions ADD COLUMN scorer_token TEXT;
ALTER TABLE competitions ADD COLUMN scorer_timeout_s INTEGER NOT NULL DEFAULT 60;
ALTER TABLE competitions ADD COLUMN scorer_memory_mb INTEGER NOT NULL DEFAULT 1024;
