-- What the model calls cost, per hour, agent, session and model (usage/pg_ledger.py): the rows of
-- the embedded ``usage.sqlite``, added to by every gateway of a cluster (a run's end adds its
-- calls to its hour's row), so ``usage.*`` and ``homarus usage`` count every gateway's runs.
CREATE TABLE usage (
    hour              bigint NOT NULL,
    agent_id          text NOT NULL,
    session_key       text NOT NULL,
    channel           text NOT NULL,
    provider          text NOT NULL,
    model             text NOT NULL,
    calls             bigint NOT NULL,
    runs              bigint NOT NULL,
    input             bigint NOT NULL,
    output            bigint NOT NULL,
    cache_read        bigint NOT NULL,
    cache_write       bigint NOT NULL,
    total_tokens      bigint NOT NULL,
    input_cost        double precision NOT NULL,
    output_cost       double precision NOT NULL,
    cache_read_cost   double precision NOT NULL,
    cache_write_cost  double precision NOT NULL,
    total_cost        double precision NOT NULL,
    missing_cost      bigint NOT NULL,
    PRIMARY KEY (hour, agent_id, session_key, provider, model)
);
CREATE INDEX usage_by_hour ON usage (hour);
