-- The channel layer's durable state every gateway shares (channels/pg_db.py): the tables of the
-- embedded channels.sqlite, so the gateway taking the channels over continues where the last one
-- stopped (cursors, accepted messages, recorded replies, pairing).
CREATE TABLE inbound (
    id            bigserial PRIMARY KEY,
    channel       text NOT NULL,
    account       text NOT NULL,
    chat          text NOT NULL,
    message_id    text NOT NULL,
    conversation  text NOT NULL,
    sender        text NOT NULL,
    payload       text NOT NULL,
    status        text NOT NULL,
    reason        text,
    run_id        text,
    received_at   bigint NOT NULL,
    updated_at    bigint NOT NULL,
    UNIQUE (channel, account, chat, message_id)
);
CREATE INDEX inbound_status ON inbound (status, id);
CREATE INDEX inbound_run ON inbound (run_id);
CREATE INDEX inbound_conversation ON inbound (conversation, status, id);

CREATE TABLE cursors (
    channel text NOT NULL,
    account text NOT NULL,
    name    text NOT NULL,
    value   text NOT NULL,
    PRIMARY KEY (channel, account, name)
);

CREATE TABLE outbox (
    id            bigserial PRIMARY KEY,
    key           text NOT NULL UNIQUE,
    conversation  text NOT NULL,
    payload       text NOT NULL,
    status        text NOT NULL,
    attempts      integer NOT NULL DEFAULT 0,
    next_at       bigint NOT NULL DEFAULT 0,
    last_error    text,
    platform_id   text,
    run_id        text,
    session_key   text,
    created_at    bigint NOT NULL,
    updated_at    bigint NOT NULL
);
CREATE INDEX outbox_status ON outbox (status, next_at, id);
CREATE INDEX outbox_run ON outbox (run_id);

CREATE TABLE pairing_requests (
    channel     text NOT NULL,
    account     text NOT NULL,
    sender      text NOT NULL,
    code        text NOT NULL UNIQUE,
    created_at  bigint NOT NULL,
    expires_at  bigint NOT NULL,
    meta        text NOT NULL,
    PRIMARY KEY (channel, account, sender)
);

CREATE TABLE pairing_allow (
    channel      text NOT NULL,
    account      text NOT NULL,
    sender       text NOT NULL,
    approved_at  bigint NOT NULL,
    approved_by  text,
    meta         text NOT NULL,
    PRIMARY KEY (channel, account, sender)
);
