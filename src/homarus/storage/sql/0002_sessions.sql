-- Every agent's session index and transcripts (sessions/pg_store.py, sessions/pg_transcript.py).
-- Entries are kept as the JSON text the embedded store writes (not jsonb): read back byte for
-- byte, exported back to files unchanged.
CREATE TABLE sessions (
    agent_id    text NOT NULL,
    key         text NOT NULL,
    updated_at  bigint,
    entry       text NOT NULL,
    PRIMARY KEY (agent_id, key)
);
CREATE INDEX sessions_updated ON sessions (agent_id, updated_at);

-- One row per transcript: its header line, how many entries it has (appends lock this row, so
-- appends to one transcript are serialised across gateways) and, once reset or deleted, the
-- suffix it was set aside under (it is kept, as the embedded store keeps the renamed file).
CREATE TABLE transcripts (
    agent_id    text NOT NULL,
    session_id  text NOT NULL,
    header      text NOT NULL,
    length      integer NOT NULL DEFAULT 0,
    archived    text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, session_id)
);

CREATE TABLE transcript_entries (
    agent_id    text NOT NULL,
    session_id  text NOT NULL,
    seq         integer NOT NULL,
    entry       text NOT NULL,
    PRIMARY KEY (agent_id, session_id, seq),
    FOREIGN KEY (agent_id, session_id) REFERENCES transcripts (agent_id, session_id) ON DELETE CASCADE
);
