"""Memory search on the shared PostgreSQL index next to the SQLite file, same data, same queries.

Run with ``.venv/bin/python bench/memory_pg_bench.py [--sizes 1000,10000] [--queries N] [--json out.json]``.

Per index size N (the chunks, vectors and queries of ``memory_bench.py``): the rows written as a
sync writes them (one transaction per group of files) into a SQLite file and into a throw-away
PostgreSQL (Debian's server binaries, ``initdb`` in a temp dir, loopback: ``tests/pg_cluster.py``),
then per backend the keyword side alone (FTS5 BM25 / tsvector with IDF weights) and the whole
``MemoryManager.search`` (hybrid: keywords, the in-memory vector matrix, fusion, rows), the query
embedding excluded. Medians and p95 over ``--queries`` queries.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.pg_cluster import pg_cluster

from bench.harness import bench_main, machine_facts, machine_footer, markdown_table, progress, summarize
from bench.memory_bench import MODEL, K, RandomProvider, _queries, _words, chunk_groups
from homarus.config.memory import MemorySearchConfig
from homarus.memory.backend import Index, IndexStore
from homarus.memory.indexfile import IndexFile
from homarus.memory.manager import MemoryManager
from homarus.memory.pg_index import PgIndex
from homarus.memory.search import query_terms
from homarus.storage.blocking import BlockingDatabase
from homarus.storage.migrations import migrate_at


def _timed(fn: Any, items: Sequence[Any]) -> dict[str, float]:
    samples = []
    for q in items:
        t = time.perf_counter()
        fn(q)
        samples.append((time.perf_counter() - t) * 1000)
    return summarize(samples)


async def _one(index: Index, groups: Any, n: int, queries: list[str], ws: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with index.writing() as writer:
        t = time.perf_counter()
        for group in groups:
            await asyncio.to_thread(writer.replace_files, group, MODEL)
        out["chunks_per_s"] = n / (time.perf_counter() - t)
    reader: IndexStore = await index.ensure_open()
    terms = [query_terms(q) for q in queries]
    reader.fts(terms[0], K)
    out["keyword"] = _timed(lambda ts: reader.fts(ts, K), terms)
    config = MemorySearchConfig.model_validate({"sync": {"onSearch": False}})
    m = MemoryManager(
        agent_id="bench", workspace=ws, db_path=Path("unused"), config=config, provider=RandomProvider(), index=index
    )
    await m.search(queries[0])  # loads the matrix
    samples = []
    for q in queries:
        t = time.perf_counter()
        await m.search(q)
        samples.append((time.perf_counter() - t) * 1000)
    out["hybrid"] = summarize(samples)
    await m.aclose()
    return out


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="homarus-memory-pg-bench-"))
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine_facts(),
        "loadavg_before": list(os.getloadavg()),
        "sizes": {},
    }
    (root / "ws").mkdir()
    rng = np.random.default_rng(42)
    vocab = _words(rng)
    queries = _queries(rng, vocab, args.queries)
    try:
        with pg_cluster() as pg:
            for n in args.sizes:
                groups = list(chunk_groups(n, rng, vocab))
                url = pg.create_database(f"memory_{n}")
                asyncio.run(migrate_at(url))
                db = BlockingDatabase(url, max_size=4)
                row: dict[str, Any] = {}
                try:
                    progress("%d chunks: SQLite", n)
                    sqlite = IndexFile(root / f"n{n}.sqlite", use_vec=False, clock=time.time)
                    row["sqlite"] = asyncio.run(_one(sqlite, groups, n, queries, root / "ws"))
                    progress("%d chunks: PostgreSQL", n)
                    row["postgres"] = asyncio.run(_one(PgIndex(db, "bench", use_vec=False), groups, n, queries, root))
                finally:
                    db.close()
                results["sizes"][str(n)] = row
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results["loadavg_after"] = list(os.getloadavg())
    return results


def _ms(s: dict[str, float]) -> str:
    return f"{s['p50']:.2f} ({s['p95']:.2f})"


def render(r: dict[str, Any]) -> str:
    header = ("N chunks", "insert chunks/s SQLite / PG", "keyword SQLite", "keyword PG", "hybrid SQLite", "hybrid PG")
    rows = [
        (
            f"{int(n):,}",
            f"{row['sqlite']['chunks_per_s']:,.0f} / {row['postgres']['chunks_per_s']:,.0f}",
            _ms(row["sqlite"]["keyword"]),
            _ms(row["postgres"]["keyword"]),
            _ms(row["sqlite"]["hybrid"]),
            _ms(row["postgres"]["hybrid"]),
        )
        for n, row in r["sizes"].items()
    ]
    lines = [f"Search times in ms: median (p95), k={K}, the query embedding excluded.", ""]
    lines += markdown_table(header, rows)
    lines += ["", *machine_footer(r)]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10000])
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run_bench, render))
