-- The audit trail every gateway writes (audit/pg_log.py): one row per record, in the order the
-- database got them (seq); ``stream`` is "audit" or "raw-stream", ``member`` the gateway.
CREATE TABLE audit_records (
    seq     bigserial PRIMARY KEY,
    stream  text NOT NULL,
    ts      bigint NOT NULL,
    run_id  text,
    member  text NOT NULL,
    record  jsonb NOT NULL
);
CREATE INDEX audit_records_stream ON audit_records (stream, seq);
CREATE INDEX audit_records_run ON audit_records (run_id, seq) WHERE run_id IS NOT NULL;
