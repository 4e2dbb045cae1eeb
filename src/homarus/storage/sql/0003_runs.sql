-- The run journal every gateway shares (queue/pg_journal.py): the embedded journal's columns, and
-- the member that owns the run (accepted it, or took it over from a member that died).
CREATE TABLE runs (
    run_id      text PRIMARY KEY,
    kind        text NOT NULL,
    session_key text,
    agent_id    text,
    lane        text,
    params      text NOT NULL,
    status      text NOT NULL,
    accepted_at bigint NOT NULL,
    started_at  bigint,
    ended_at    bigint,
    result      text,
    error       text,
    request     text,
    resumes     integer NOT NULL DEFAULT 0,
    joined_to   text,
    owner       text,
    seq         bigserial
);
CREATE INDEX runs_unfinished ON runs (owner, seq) WHERE status IN ('accepted', 'running');
CREATE INDEX runs_finished ON runs (accepted_at) WHERE status NOT IN ('accepted', 'running');

-- One session's runs execute on one gateway at a time: the member holding its lease, renewed by
-- that member's heartbeat; a lease not renewed by its expiry may be taken by another member.
CREATE TABLE session_leases (
    session_key text PRIMARY KEY,
    member_id   text NOT NULL,
    expires_at  timestamptz NOT NULL,
    fence       bigint NOT NULL DEFAULT 1
);
CREATE INDEX session_leases_member ON session_leases (member_id);
