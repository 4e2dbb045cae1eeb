-- Paired devices, their pending pairing requests and their tokens (security/devices.py), shared
-- by every gateway of a cluster: a device paired through one gateway connects to any, and a
-- token rotated or revoked on one is so on all. The tables and statements of the embedded
-- ``devices.sqlite``; tokens are stored as their SHA-256 only.
CREATE TABLE paired (
    device_id     text PRIMARY KEY,
    public_key    text NOT NULL,
    role          text NOT NULL,
    scopes        text NOT NULL,
    display_name  text,
    platform      text,
    client_id     text,
    client_mode   text,
    approved_at   bigint NOT NULL,
    approved_by   text,
    last_seen_at  bigint
);

CREATE TABLE pending (
    request_id  text PRIMARY KEY,
    device_id   text NOT NULL UNIQUE,
    public_key  text NOT NULL,
    role        text NOT NULL,
    scopes      text NOT NULL,
    meta        text NOT NULL,
    ip          text NOT NULL,
    created_at  bigint NOT NULL,
    expires_at  bigint NOT NULL
);

CREATE TABLE tokens (
    device_id   text NOT NULL,
    role        text NOT NULL,
    token_hash  text NOT NULL,
    issued_at   bigint NOT NULL,
    PRIMARY KEY (device_id, role)
);
