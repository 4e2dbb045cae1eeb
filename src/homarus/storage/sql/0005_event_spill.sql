-- Events relayed between gateways that are too big for a notification's 8000-byte payload
-- (storage/relay.py): the notification carries the row's id; rows are removed after minutes.
CREATE TABLE event_spill (
    id          bigserial PRIMARY KEY,
    body        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX event_spill_created ON event_spill (created_at);
