-- Cron jobs every gateway shares (cron/pg_store.py): a job's definition and its run state apart,
-- so an edit on one gateway and a run ending on another never overwrite each other's half; the
-- member running the job now (claimed in one UPDATE, so a job runs once per due time cluster-wide).
CREATE TABLE cron_jobs (
    id          text PRIMARY KEY,
    position    bigserial,
    definition  jsonb NOT NULL,
    state       jsonb NOT NULL,
    running_by  text,
    running_run text,
    changed_at  timestamptz NOT NULL DEFAULT now()
);

-- Each job's run history (cron/pg_runlog.py), oldest first by seq; pruned to the newest rows.
CREATE TABLE cron_runs (
    seq     bigserial PRIMARY KEY,
    job_id  text NOT NULL,
    entry   jsonb NOT NULL
);
CREATE INDEX cron_runs_job ON cron_runs (job_id, seq);
