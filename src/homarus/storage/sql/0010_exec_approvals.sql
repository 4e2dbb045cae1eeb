-- The host's exec approvals every gateway of a cluster shares (security/pg_exec_approvals.py): the
-- document the embedded ``exec-approvals.json`` holds (policy and allow-always patterns), one row,
-- changed under its row lock so two gateways granting at once both keep their patterns.
CREATE TABLE exec_approvals (
    id          smallint PRIMARY KEY CHECK (id = 1),
    doc         jsonb NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
