-- The cluster's singleton roles (storage/roles.py): one member holds each, renewing it by its
-- heartbeat; a role not renewed by its expiry may be taken by another member.
CREATE TABLE cluster_roles (
    role        text PRIMARY KEY,
    member_id   text NOT NULL,
    expires_at  timestamptz NOT NULL,
    fence       bigint NOT NULL DEFAULT 1,
    taken_at    timestamptz NOT NULL DEFAULT now()
);
