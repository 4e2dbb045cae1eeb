-- The agents' memory indexes every gateway shares (memory/pg_store.py, memory/pg_index.py).
-- One row per agent names the generation searches read and a version bumped by every write, so a
-- gateway knows when its in-memory vector matrix is behind. A full rebuild fills a new
-- generation beside the current one and switches in one UPDATE; the old rows are deleted after.
CREATE TABLE memory_indexes (
    agent       text PRIMARY KEY,
    generation  bigint NOT NULL DEFAULT 1,
    version     bigint NOT NULL DEFAULT 0
);

-- What a generation was built with (provider, model, chunking: index.py decides on a rebuild).
CREATE TABLE memory_generations (
    agent  text NOT NULL,
    gen    bigint NOT NULL,
    meta   jsonb,
    PRIMARY KEY (agent, gen)
);

CREATE TABLE memory_files (
    agent     text NOT NULL,
    gen       bigint NOT NULL,
    path      text NOT NULL,
    source    text NOT NULL,
    hash      text NOT NULL,
    mtime_ns  bigint NOT NULL,
    size      bigint NOT NULL,
    PRIMARY KEY (agent, gen, path)
);

-- Keyword search reads ``tsv``: the chunk's words as the query side cuts them (memory/search.py:
-- words), joined by spaces and parsed with 'simple' (no stemming). Cut in Python, not by
-- PostgreSQL's parser, which reads "TCK-4000" as 'tck' and '-4000' and lower-cases by the
-- database's locale. Vectors are little-endian float32, as in the SQLite index.
CREATE TABLE memory_chunks (
    seq         bigserial PRIMARY KEY,
    agent       text NOT NULL,
    gen         bigint NOT NULL,
    id          text NOT NULL,
    path        text NOT NULL,
    source      text NOT NULL,
    start_line  integer NOT NULL,
    end_line    integer NOT NULL,
    hash        text NOT NULL,
    model       text NOT NULL,
    dims        integer,
    text        text NOT NULL,
    embedding   bytea,
    updated_at  bigint NOT NULL,
    tsv         tsvector NOT NULL,
    UNIQUE (agent, gen, id)
);
CREATE INDEX memory_chunks_path ON memory_chunks (agent, gen, path);
CREATE INDEX memory_chunks_tsv ON memory_chunks USING gin (tsv) WITH (fastupdate = off);
CREATE INDEX memory_chunks_novec ON memory_chunks (agent, gen, model) WHERE embedding IS NULL;

-- Vectors by provider, model and chunk text hash: text already embedded (by any gateway, in any
-- generation) is never sent to the provider again.
CREATE TABLE memory_embedding_cache (
    agent         text NOT NULL,
    provider      text NOT NULL,
    model         text NOT NULL,
    provider_key  text NOT NULL,
    hash          text NOT NULL,
    embedding     bytea NOT NULL,
    dims          integer NOT NULL,
    updated_at    bigint NOT NULL,
    PRIMARY KEY (agent, provider, model, provider_key, hash)
);
CREATE INDEX memory_embedding_cache_age ON memory_embedding_cache (agent, updated_at);
