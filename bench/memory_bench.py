"""Memory index performance: indexing, keyword / vector / hybrid search latency, incremental reindex.

Run with ``.venv/bin/python bench/memory_bench.py [--sizes 1000,10000,100000] [--queries N] [--json out.json]``.

Phases, per index size N (chunks of about 1,000 characters of Zipf-distributed pseudo-words,
random unit 384-d vectors, as in the reference's measurements; 10 chunks per file):

1. **insert**: ``MemoryStore.replace_files`` (chunks + FTS5 rows + sqlite-vec rows, one transaction
   per group of 64 files), as a sync writes them; chunks/s and the DB size.
2. **search** (the query embedding excluded: the provider returns a precomputed vector):
   * keyword only: the FTS5 OR query the manager builds, ``LIMIT 24`` (default maxResults 6 x 4);
   * vector only: sqlite-vec ``vec0`` KNN (k=24) vs numpy over the in-memory float32 matrix;
   * the whole ``MemoryManager.search`` (hybrid: both sides, fusion, rows, snippets) on each vector
     backend, plus the one-off cost of loading the matrix after a sync.
3. **incremental reindex** (``--files``, default 10,000 one-chunk files on disk): the first sync,
   then one file changed and ``sync()`` timed (listing, stat of every file, re-chunk, write), and
   the same with the changed path given, as the file watcher does (no listing).

Medians and p95 over ``--queries`` queries (three mid-frequency words each, half of them with
question words in front, like a user's question). The DB files live in a temp dir on the project
disk (``--dir`` to change), removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import bench_main, machine_facts, machine_footer, markdown_table, progress, summarize
from homarus.config.memory import MemorySearchConfig
from homarus.memory.embedding import TaskType
from homarus.memory.index import FILES_PER_GROUP, chunk_id
from homarus.memory.manager import MemoryManager
from homarus.memory.search import query_terms
from homarus.memory.sqlite import binding
from homarus.memory.store import FileRow, MemoryStore, NewChunk, encode_vector

DIMS = 384
K = 24
VOCAB = 20_000
WORDS_PER_CHUNK = 150
CHUNKS_PER_FILE = 10
MODEL = "bench-random"
TARGET_HYBRID_P50_MS_100K = 15.0
TARGET_INCREMENTAL_MS = 200.0


class RandomProvider:
    """Deterministic random unit vectors keyed by the text: a stand-in with zero embedding cost."""

    id = "bench"
    model = MODEL
    dims: int | None = DIMS
    max_input_tokens = 8192

    def vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()  # type: ignore[no-any-return]

    async def embed(self, texts: Sequence[str], task: TaskType = "document") -> list[list[float]]:
        return [self.vector(t) for t in texts]

    async def aclose(self) -> None:
        return None


def _words(rng: np.random.Generator) -> np.ndarray[Any, np.dtype[np.str_]]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lengths = rng.integers(3, 10, VOCAB)
    return np.array(["".join(rng.choice(letters, n)) for n in lengths])


def _texts(rng: np.random.Generator, vocab: np.ndarray[Any, Any], n: int) -> list[str]:
    weights = 1.0 / np.arange(1, VOCAB + 1)
    ids = rng.choice(VOCAB, size=(n, WORDS_PER_CHUNK), p=weights / weights.sum())
    return [" ".join(vocab[row]) for row in ids]


def _queries(rng: np.random.Generator, vocab: np.ndarray[Any, Any], n: int) -> list[str]:
    out = []
    for i in range(n):
        words = " ".join(vocab[rng.integers(50, 5000, 3)])
        out.append(f"what did we decide about {words}" if i % 2 else words)
    return out


def chunk_groups(
    n: int, rng: np.random.Generator, vocab: np.ndarray[Any, Any]
) -> Iterator[list[tuple[FileRow, list[NewChunk]]]]:
    """``n`` chunks in files of ``CHUNKS_PER_FILE``, in groups of ``FILES_PER_GROUP`` files (as a
    sync writes them: one transaction per group); built as they are taken."""
    texts = _texts(rng, vocab, n)
    vectors = rng.standard_normal((n, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    group: list[tuple[FileRow, list[NewChunk]]] = []
    for f in range(0, n, CHUNKS_PER_FILE):
        rel = f"memory/file-{f // CHUNKS_PER_FILE:06d}.md"
        chunks = []
        for i in range(f, min(n, f + CHUNKS_PER_FILE)):
            h = hashlib.sha256(texts[i].encode()).hexdigest()
            line = (i - f) * 10 + 1
            cid = chunk_id("memory", rel, line, line + 9, h, MODEL)
            chunks.append(NewChunk(cid, line, line + 9, h, texts[i], vectors[i].tobytes(), DIMS))
        group.append((FileRow(rel, "memory", "h", 0, 0), chunks))
        if len(group) == FILES_PER_GROUP:
            yield group
            group = []
    if group:
        yield group


def _build(path: Path, n: int, rng: np.random.Generator, vocab: np.ndarray[Any, Any]) -> dict[str, float]:
    groups = chunk_groups(n, rng, vocab)  # texts and vectors made here; chunks as they are written
    store = MemoryStore.open(path, use_vec=True)
    t0 = time.perf_counter()
    for group in groups:
        store.replace_files(group, MODEL)
    elapsed = time.perf_counter() - t0
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return {"insert_s": elapsed, "chunks_per_s": n / elapsed, "db_mib": path.stat().st_size / 2**20}


def _time(fn: Any, queries: Sequence[Any]) -> dict[str, float]:
    samples = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        samples.append((time.perf_counter() - t) * 1000)
    return summarize(samples)


async def _time_async(fn: Any, queries: Sequence[Any]) -> dict[str, float]:
    """Wall time per call, plus the process's CPU time per call (all threads: steadier under load)."""
    samples, cpu = [], []
    for q in queries:
        t, c = time.perf_counter(), time.process_time()
        await fn(q)
        samples.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    out = summarize(samples)
    out["cpu_p50"] = summarize(cpu)["p50"]
    return out


async def _search_phase(path: Path, queries: list[str]) -> dict[str, Any]:
    provider = RandomProvider()
    qvecs = [provider.vector(q) for q in queries]
    store = MemoryStore.open(path, use_vec=True)
    out: dict[str, Any] = {"vec_loaded": store.vec_available}
    exprs = [query_terms(q) for q in queries]
    store.fts(exprs[0], K)  # warm the page cache
    out["fts"] = _time(lambda e: store.fts(e, K), exprs)
    blobs = [encode_vector(v) for v in qvecs]
    store.vec_knn(blobs[0], K)
    out["vec0"] = _time(lambda b: store.vec_knn(b, K), blobs)
    t = time.perf_counter()
    seqs, matrix = store.vector_matrix(MODEL)
    out["matrix_load_ms"] = (time.perf_counter() - t) * 1000
    out["matrix_mib"] = matrix.nbytes / 2**20

    def numpy_knn(q: list[float]) -> list[int]:
        scores = matrix @ np.asarray(q, dtype=np.float32)
        top = np.argpartition(-scores, K - 1)[:K]
        return [int(seqs[i]) for i in top[np.argsort(-scores[top])]]

    out["numpy"] = _time(numpy_knn, qvecs)
    # the two paths agree on the top hits
    out["agree"] = all(numpy_knn(q)[:10] == [s for s, _ in store.vec_knn(encode_vector(q), K)][:10] for q in qvecs[:5])
    store.close()
    config = MemorySearchConfig.model_validate({"sync": {"onSearch": False}})
    for backend in ("matrix", "sqlite-vec"):
        m = MemoryManager(
            agent_id="bench", workspace=path.parent, db_path=path, config=config, provider=provider,
            vector_backend=backend,
        )  # fmt: skip
        t = time.perf_counter()
        await m.search(queries[0])  # opens the DB (and loads the matrix)
        out[f"first_search_{backend}_ms"] = (time.perf_counter() - t) * 1000
        out[f"hybrid_{backend}"] = await _time_async(m.search, queries)
        resp = await m.search(queries[1])
        out[f"hybrid_{backend}_mode"] = resp.mode
        await m.aclose()
    return out


async def _incremental(root: Path, files: int) -> dict[str, float]:
    ws = root / "ws"
    mem = ws / "memory"
    mem.mkdir(parents=True)
    rng = np.random.default_rng(3)
    vocab = _words(rng)
    for i, text in enumerate(_texts(rng, vocab, files)):
        (mem / f"note-{i:05d}.md").write_text(f"# note {i}\n{text}\n")
    m = MemoryManager(
        agent_id="bench", workspace=ws, db_path=root / "inc.sqlite",
        config=MemorySearchConfig.model_validate({"sync": {"onSearch": False}}), provider=RandomProvider(),
    )  # fmt: skip
    t = time.perf_counter()
    first = await m.sync()
    initial = time.perf_counter() - t
    samples, cpu, nothing, nothing_cpu = [], [], [], []
    for i in range(5):
        target = mem / f"note-{i * 97:05d}.md"
        target.write_text(target.read_text() + f"\nchanged {i}\n")
        t, c = time.perf_counter(), time.process_time()
        r = await m.sync()
        samples.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        assert r.files_indexed == 1, r
        t, c = time.perf_counter(), time.process_time()
        await m.sync()
        nothing.append((time.perf_counter() - t) * 1000)
        nothing_cpu.append((time.process_time() - c) * 1000)
    watched = []
    for i in range(5):  # as the file watcher does it: the changed path is known
        target = mem / f"note-{i * 89 + 1:05d}.md"
        target.write_text(target.read_text() + f"\nwatched change {i}\n")
        t = time.perf_counter()
        r = await m.sync(reason="watch", paths=[str(target)])
        watched.append((time.perf_counter() - t) * 1000)
        assert r.files_indexed == 1, r
    await m.aclose()
    return {
        "files": files,
        "initial_s": initial,
        "initial_files_per_s": files / initial,
        "chunks": first.chunks_written,
        "one_file_ms": float(np.median(samples)),
        "one_file_max_ms": max(samples),
        "one_file_cpu_ms": float(np.median(cpu)),
        "no_change_ms": float(np.median(nothing)),
        "no_change_cpu_ms": float(np.median(nothing_cpu)),
        "watched_ms": float(np.median(watched)),
    }


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="homarus-memory-bench-", dir=args.dir))
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine_facts(),
        "loadavg_before": list(os.getloadavg()),
        "sqlite": f"{binding().name} {binding().sqlite_version}",
        "sizes": {},
    }
    try:
        rng = np.random.default_rng(42)
        vocab = _words(rng)
        queries = _queries(rng, vocab, args.queries)
        for n in args.sizes:
            progress("building %d chunks", n)
            path = root / f"n{n}.sqlite"
            row: dict[str, Any] = _build(path, n, rng, vocab)
            progress("searching %d chunks", n)
            row.update(asyncio.run(_search_phase(path, queries)))
            results["sizes"][str(n)] = row
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        if args.files:
            progress("incremental reindex over %d files", args.files)
            results["incremental"] = asyncio.run(_incremental(root, args.files))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results["loadavg_after"] = list(os.getloadavg())
    return results


def _ms(s: dict[str, float]) -> str:
    """median (p95) min; the minimum is the best estimate of the cost on an idle machine."""
    cpu = f"; CPU {s['cpu_p50']:.1f}" if "cpu_p50" in s else ""
    return f"{s['p50']:.2f} ({s['p95']:.2f}) {s['min']:.2f}{cpu}"


def render(r: dict[str, Any]) -> str:
    header = ("N chunks", "insert chunks/s", "DB MiB", "FTS5 OR", "vec0 KNN", "numpy KNN", "matrix load ms / MiB",
              "hybrid search, matrix", "hybrid search, sqlite-vec")  # fmt: skip
    rows = []
    for n, row in r["sizes"].items():
        rows.append(
            (
                f"{int(n):,}",
                f"{row['chunks_per_s']:,.0f}",
                f"{row['db_mib']:.0f}",
                _ms(row["fts"]),
                _ms(row["vec0"]),
                _ms(row["numpy"]),
                f"{row['matrix_load_ms']:.0f} / {row['matrix_mib']:.0f}",
                _ms(row["hybrid_matrix"]),
                _ms(row["hybrid_sqlite-vec"]),
            )
        )
    agree = all(row["agree"] for row in r["sizes"].values())
    lines = [
        f"Search times in ms: median (p95) minimum, k={K}; {r['sqlite']}; numpy and vec0 top-10 identical: {agree}.",
        "",
    ]
    lines += markdown_table(header, rows)
    if "incremental" in r:
        inc = r["incremental"]
        lines += [
            "",
            *markdown_table(
                ("incremental reindex", "value", "target"),
                [
                    (f"first sync of {inc['files']:,} files ({inc['chunks']:,} chunks, zero-cost embedder)",
                     f"{inc['initial_s']:.1f} s ({inc['initial_files_per_s']:,.0f} files/s)", "—"),
                    ("sync after one file changed, median of 5 (max)",
                     f"{inc['one_file_ms']:.0f} ms ({inc['one_file_max_ms']:.0f}); CPU {inc['one_file_cpu_ms']:.0f} ms",
                     f"≤ {TARGET_INCREMENTAL_MS:.0f} ms"),
                    ("sync of one changed file whose path the watcher reported, median of 5",
                     f"{inc['watched_ms']:.1f} ms", f"≤ {TARGET_INCREMENTAL_MS:.0f} ms"),
                    ("sync with nothing changed",
                     f"{inc['no_change_ms']:.0f} ms; CPU {inc['no_change_cpu_ms']:.0f} ms", "—"),
                ],
            ),
        ]  # fmt: skip
    return "\n".join(lines + machine_footer(r))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--sizes", default="1000,10000,100000", help="comma-separated chunk counts")
    p.add_argument("--queries", type=int, default=50, help="queries per measurement (default 50)")
    p.add_argument("--files", type=int, default=10_000, help="files for the incremental reindex phase (0: skip)")
    p.add_argument("--dir", type=Path, default=None, help="where the temp DBs go (default: $TMPDIR)")
    p.add_argument("--json", type=Path, help="also write all results as JSON to this file")
    args = p.parse_args(argv)
    args.sizes = [int(x) for x in str(args.sizes).split(",") if x.strip()]
    if not args.sizes or min(args.sizes) < 100 or args.queries < 2:
        p.error("--sizes must be >= 100 each, --queries >= 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args, run_bench, render)


if __name__ == "__main__":
    sys.exit(main())
