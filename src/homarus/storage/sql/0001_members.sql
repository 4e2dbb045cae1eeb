-- The gateways sharing this database: each registers at start, is seen again every few seconds,
-- and removes itself when it stops (one killed is no longer counted once its ttl has passed).
CREATE TABLE gateway_members (
    id          text PRIMARY KEY,
    host        text NOT NULL,
    pid         integer NOT NULL,
    port        integer,
    version     text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    seen_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gateway_members_seen ON gateway_members (seen_at);
