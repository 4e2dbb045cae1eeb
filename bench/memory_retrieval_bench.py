"""Offline retrieval benchmark for memory search: BM25, vectors and hybrid fusions, nDCG@10.

Usage: .venv/bin/python bench/memory_retrieval_bench.py [--split] [--speed] [--sources DIR]

Data (reference memory.md §12): the reST sources of the Python 3.11 documentation shipped by
Debian's ``python3.11-doc`` (``apt-get install -y python3.11-doc``). Every section of ``faq/``,
``tutorial/``, ``howto/`` and ``reference/`` with a body of at least 80 characters is a document
(title removed from the body, reST roles and links lightly cleaned). Two query sets:

* **pyfaq**: each FAQ section title that ends in ``?``; the one relevant document is its answer.
  Real human question → answer pairs, natural-language queries.
* **pytitles**: 300 unique section titles of at least two words from tutorial/howto/reference
  (chosen by hash order, so the same every run); the relevant document is that section. Short,
  keyword-like queries, closer to how memory is searched.

Documents are chunked like memory files (400/80), indexed into SQLite FTS5 (stdlib ``sqlite3``)
and embedded with the local all-MiniLM-L6-v2 provider; 40 candidates per retriever, chunk lists
mapped to documents by first occurrence, then nDCG@10, Recall@10, MRR@10, and a paired two-sided
randomisation test (10,000 sign flips) of each system against vector-only and against BM25.

The fusion variants are small pure functions below (:data:`FUSIONS`); the row ``homarus fuse`` runs
the real ``homarus.memory.search`` code (its FTS query and :func:`fuse`) on the same candidates, so
the benchmark follows the implementation as it changes. Embeddings are cached in
``bench/out/memory_cache/`` (first run about 3-4 min of embedding on 2 cores, later runs seconds).
``--split`` adds the variant where chunks are first cut at the model's 256 word pieces (as 1,024
bytes, the way the indexer splits at ``max_input_tokens * 4``) instead of being truncated by it.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from homarus.memory.chunking import ChunkingParams, chunk_markdown, split_for_input_limit
from homarus.memory.local_minilm import BATCH_SIZE, MAX_WORD_PIECES, LocalMiniLMProvider
from homarus.memory.search import Candidate, bm25_score, fts_query, fuse

SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
CACHE = Path(__file__).resolve().parent / "out" / "memory_cache"
SECTIONS = ("faq", "tutorial", "howto", "reference")
CANDIDATES = 40  # maxResults 10 x candidateMultiplier 4
K = 10
PERMUTATIONS = 10_000
F32 = npt.NDArray[np.float32]
Ranked = list[tuple[int, float]]  # (chunk index, score), best first


# -- the data set -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Doc:
    id: int
    part: str
    title: str
    text: str


_ADORN = re.compile(r"^([=\-~^\"'*+#:._`])\1{2,}\s*$")
_DROP_DIRECTIVE = re.compile(
    r"^\s*\.\. (_[^:]+:|index::|highlight::|module::|moduleauthor::|sectionauthor::|currentmodule::|only::|"
    r"contents::|toctree::|tabularcolumns::|testsetup::|testcleanup::|productionlist::|c:|\|)"
)
_ROLE = re.compile(r":[\w:+.-]+:`[!~]?([^`<]*?)\s*(?:<[^>]*>)?`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^>]+>`__?")
_MARKUP = [
    (re.compile(r"``([^`]+)``"), r"\1"),
    (re.compile(r"`([^`]+)`_{0,2}"), r"\1"),
    (re.compile(r"^\s*\.\. \w+::"), ""),
]


def clean(lines: Sequence[str]) -> str:
    out: list[str] = []
    skipping = False
    for line in lines:
        if _DROP_DIRECTIVE.match(line):
            skipping = True
            continue
        if skipping and (line.startswith((" ", "\t")) or not line.strip()):
            continue
        skipping = False
        text = _LINK.sub(r"\1", _ROLE.sub(r"\1", line))
        for pattern, repl in _MARKUP:
            text = pattern.sub(repl, text)
        out.append(text.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def sections(path: Path) -> list[tuple[str, str]]:
    """(title, cleaned body) of every reST section in one file."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    heads: list[tuple[int, int, str]] = []  # (first line of the heading, first body line, title)
    for i in range(len(lines) - 1):
        title, under = lines[i], lines[i + 1]
        if not title.strip() or title[0].isspace() or _ADORN.match(title) or not _ADORN.match(under):
            continue
        if len(under.rstrip()) < len(title.rstrip()) or (
            i > 0 and lines[i - 1].strip() and not _ADORN.match(lines[i - 1])
        ):
            continue
        start = i - 1 if i > 0 and _ADORN.match(lines[i - 1]) else i
        heads.append((start, i + 2, title.strip()))
    found = []
    for n, (_, body_start, title) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        found.append((title, clean(lines[body_start:end])))
    return found


def build_dataset(root: Path) -> tuple[list[Doc], dict[str, list[tuple[str, int]]]]:
    docs: list[Doc] = []
    for part in SECTIONS:
        for path in sorted((root / part).glob("*.rst.txt")):
            for title, body in sections(path):
                if len(body) >= 80:
                    docs.append(Doc(len(docs), part, re.sub(r"\s+", " ", clean([title])), body))
    faq = [(d.title, d.id) for d in docs if d.part == "faq" and d.title.endswith("?")]
    counts: dict[str, int] = {}
    for d in docs:
        counts[d.title.lower()] = counts.get(d.title.lower(), 0) + 1
    generic = {"introduction", "overview", "examples", "example", "summary", "footnotes", "see also", "notes"}
    titled = [
        (d.title, d.id)
        for d in docs
        if d.part != "faq"
        and counts[d.title.lower()] == 1
        and len(re.findall(r"[A-Za-z]{2,}", d.title)) >= 2
        and d.title.lower() not in generic
    ]
    titled.sort(key=lambda q: hashlib.sha256(q[0].encode()).hexdigest())
    return docs, {"pyfaq": faq, "pytitles": titled[:300]}


def chunk_docs(docs: Sequence[Doc], split_bytes: int | None) -> tuple[list[str], list[int]]:
    texts: list[str] = []
    owner: list[int] = []
    for d in docs:
        for chunk in chunk_markdown(d.text, ChunkingParams(tokens=400, overlap=80)):
            pieces = split_for_input_limit(chunk, split_bytes) if split_bytes else [chunk]
            for piece in pieces:
                if piece.text.strip():
                    texts.append(piece.text)
                    owner.append(d.id)
    return texts, owner


# -- embeddings, cached -------------------------------------------------------------------------
def embed_cached(provider: LocalMiniLMProvider, texts: Sequence[str], label: str) -> tuple[F32, float | None]:
    """(matrix, seconds spent embedding or None when cached)."""
    weights = provider.model_dir / "model.safetensors"
    key = hashlib.sha256(f"minilm-numpy-v1|{weights.stat().st_size}|".encode() + "\x00".join(texts).encode())
    path = CACHE / f"emb_{label}_{key.hexdigest()[:16]}.npy"
    if path.exists():
        return np.load(path), None
    t0 = time.perf_counter()
    matrix = provider.embed_sync(texts)
    spent = time.perf_counter() - t0
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, matrix)
    return matrix, spent


# -- retrievers ---------------------------------------------------------------------------------
class Fts:
    def __init__(self, texts: Sequence[str]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(text, cid UNINDEXED)")
        self.db.executemany("INSERT INTO chunks_fts (text, cid) VALUES (?, ?)", [(t, i) for i, t in enumerate(texts)])
        self.times: list[float] = []

    def search(self, expr: str | None) -> Ranked:
        if not expr:
            return []
        t0 = time.perf_counter()
        rows = self.db.execute(
            "SELECT cid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts) LIMIT ?",
            (expr, CANDIDATES),
        ).fetchall()
        self.times.append(time.perf_counter() - t0)
        return [(int(cid), bm25_score(float(rank))) for cid, rank in rows]


def or_query(query: str) -> str | None:
    """The classic FTS query with OR: every [A-Za-z0-9_]+ token quoted, nothing dropped."""
    tokens = re.findall(r"[A-Za-z0-9_]+", query)
    return " OR ".join(f'"{t}"' for t in dict.fromkeys(tokens)) or None


def vector_search(matrix: F32, qv: F32) -> Ranked:
    scores = matrix @ qv
    top = np.argpartition(-scores, min(CANDIDATES, len(scores) - 1))[:CANDIDATES]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(i), float(scores[i])) for i in top]


# -- fusions: pure functions of the two candidate lists ---------------------------------------------
def fuse_openclaw(vec: Ranked, txt: Ranked) -> Ranked:
    """The original: 0.7·cosine + 0.3·rel/(1+rel), a missing side counting 0."""
    scores: dict[int, float] = {}
    for cid, s in vec:
        scores[cid] = scores.get(cid, 0.0) + 0.7 * s
    for cid, s in txt:
        scores[cid] = scores.get(cid, 0.0) + 0.3 * s
    return sorted(scores.items(), key=lambda kv: -kv[1])


def _minmax(ranked: Ranked) -> dict[int, float]:
    if not ranked:
        return {}
    lo, hi = min(s for _, s in ranked), max(s for _, s in ranked)
    return {cid: (s - lo) / (hi - lo) if hi > lo else 1.0 for cid, s in ranked}


def minmax(vector_weight: float = 0.7) -> Callable[[Ranked, Ranked], Ranked]:
    """Each list normalised to [0, 1] per query, then weighted (0.7/0.3 by default)."""

    def fused(vec: Ranked, txt: Ranked) -> Ranked:
        nv, nt = _minmax(vec), _minmax(txt)
        w = vector_weight
        merged = ((c, w * nv.get(c, 0.0) + (1 - w) * nt.get(c, 0.0)) for c in nv.keys() | nt.keys())
        return sorted(merged, key=lambda kv: -kv[1])

    return fused


def rrf(weights: tuple[float, float], k: int = 60) -> Callable[[Ranked, Ranked], Ranked]:
    def fused(vec: Ranked, txt: Ranked) -> Ranked:
        scores: dict[int, float] = {}
        for w, ranked in zip(weights, (vec, txt), strict=True):
            for rank, (cid, _) in enumerate(ranked, start=1):
                scores[cid] = scores.get(cid, 0.0) + w / (k + rank)
        return sorted(scores.items(), key=lambda kv: -kv[1])

    return fused


def fuse_homarus(vec: Ranked, txt: Ranked) -> Ranked:
    """The implementation's own fusion (default mode and weights), on the same candidates."""
    cands: dict[int, Candidate] = {}
    for cid, s in vec:
        cands[cid] = Candidate(seq=cid, path="", source="memory", start_line=1, end_line=1, text="", vector_score=s)
    for cid, s in txt:
        cands.setdefault(cid, Candidate(seq=cid, path="", source="memory", start_line=1, end_line=1, text=""))
        cands[cid].text_score = s
    fuse(list(cands.values()), weights=(0.7, 0.3), mode="minmax")
    return sorted(((c.seq, c.score) for c in cands.values()), key=lambda kv: -kv[1])


FUSIONS: dict[str, Callable[[Ranked, Ranked], Ranked]] = {
    "hybrid 0.7/0.3 OpenClaw formula (cos + rel/(1+rel))": fuse_openclaw,
    "hybrid 0.7/0.3 per-query min-max": minmax(0.7),
    "hybrid RRF k=60, weights 0.7/0.3": rrf((0.7, 0.3)),
    "hybrid RRF k=60, equal weights": rrf((1.0, 1.0)),
}


# -- metrics ------------------------------------------------------------------------------------------
def first_rank(ranked: Ranked, owner: Sequence[int], relevant: int) -> int | None:
    """1-based rank of the relevant document among distinct documents (first occurrence), if ≤ K."""
    seen: set[int] = set()
    for cid, _ in ranked:
        doc = owner[cid]
        if doc in seen:
            continue
        seen.add(doc)
        if doc == relevant:
            return len(seen)
        if len(seen) >= K:
            return None
    return None


def per_query(ranks: Sequence[int | None]) -> dict[str, npt.NDArray[np.float64]]:
    return {
        "ndcg": np.array([1.0 / math.log2(r + 1) if r else 0.0 for r in ranks]),
        "recall": np.array([1.0 if r else 0.0 for r in ranks]),
        "mrr": np.array([1.0 / r if r else 0.0 for r in ranks]),
    }


def paired_p(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64], seed: int = 7) -> float:
    diff = a - b
    if not np.any(diff):
        return 1.0
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(PERMUTATIONS, len(diff)))
    observed = abs(diff.mean())
    extreme = np.sum(np.abs((signs * diff).mean(axis=1)) >= observed - 1e-12)
    return float((extreme + 1) / (PERMUTATIONS + 1))


def fmt_p(p: float, a: float, b: float) -> str:
    if p >= 1.0:
        return "="
    word = "better" if a > b else "worse"
    return f"{'<1e-4' if p < 1e-4 else f'{p:.4f}'} ({word})"


# -- the run ------------------------------------------------------------------------------------------
def evaluate(
    name: str,
    queries: list[tuple[str, int]],
    texts: list[str],
    owner: list[int],
    matrix: F32,
    qmatrix: F32,
    fts: Fts,
) -> dict[str, dict[str, npt.NDArray[np.float64]]]:
    systems: dict[str, list[int | None]] = {}

    def add(system: str, ranked: Ranked, rel: int) -> None:
        systems.setdefault(system, []).append(first_rank(ranked, owner, rel))

    vec_times: list[float] = []
    for (query, rel), qv in zip(queries, qmatrix, strict=True):
        txt_or = fts.search(or_query(query))
        txt_h = fts.search(fts_query(query))
        t0 = time.perf_counter()
        vec = vector_search(matrix, qv)
        vec_times.append(time.perf_counter() - t0)
        add("BM25, FTS5 OR of all tokens", txt_or, rel)
        add("BM25, homarus fts_query (OR, stop words dropped)", txt_h, rel)
        add("vector-only (cosine)", vec, rel)
        for label, fusion in FUSIONS.items():
            add(label, fusion(vec, txt_or), rel)
        add("homarus fuse (default: min-max 0.7/0.3, homarus fts_query)", fuse_homarus(vec, txt_h), rel)
    print(f"[{name}] vector top-{CANDIDATES} over {len(texts)} chunks: p50 {statistics.median(vec_times) * 1e3:.2f} ms")
    return {system: per_query(ranks) for system, ranks in systems.items()}


def table(results: dict[str, dict[str, dict[str, npt.NDArray[np.float64]]]]) -> str:
    sets = list(results)
    head = "| system | " + " | ".join(f"{s} nDCG@10 | R@10 | MRR | p vs vector | p vs BM25" for s in sets) + " |"
    lines = [head, "|" + " --- |" * (1 + 5 * len(sets))]
    for system in results[sets[0]]:
        cells = [system]
        for s in sets:
            m = results[s][system]
            vec = results[s]["vector-only (cosine)"]["ndcg"]
            bm = results[s]["BM25, FTS5 OR of all tokens"]["ndcg"]
            nd = float(m["ndcg"].mean())
            cells += [f"{nd:.4f}", f"{m['recall'].mean():.4f}", f"{m['mrr'].mean():.4f}"]
            cells.append(fmt_p(paired_p(m["ndcg"], vec), nd, float(vec.mean())))
            cells.append(fmt_p(paired_p(m["ndcg"], bm), nd, float(bm.mean())))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def speed(provider: LocalMiniLMProvider, texts: Sequence[str]) -> None:
    """Wall time per 100 chunks at batch sizes 8/16/32 (min and median of 3), and one query."""
    samples = {
        "100 chunks of 1200-1600 chars (truncated at 256 word pieces)": [t for t in texts if len(t) >= 1200][:100],
        "100 chunks of 200-600 chars": [t for t in texts if 200 <= len(t) <= 600][:100],
    }
    for label, sample in samples.items():
        print(f"\nembedding speed, {label}:")
        for batch in (8, 16, 32):
            provider.batch_size = batch
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                provider.embed_sync(sample)
                runs.append(time.perf_counter() - t0)
            per100 = 100 / len(sample)
            print(
                f"  batch {batch:2d}: min {min(runs) * per100:.2f} s, median {statistics.median(runs) * per100:.2f} s"
            )
    provider.batch_size = BATCH_SIZE
    t = []
    for q in ["how do I read a file line by line", "What is a generator?", "Methods of File Objects"] * 10:
        t0 = time.perf_counter()
        provider.embed_sync([q])
        t.append(time.perf_counter() - t0)
    print(f"  one query: p50 {statistics.median(t) * 1e3:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", type=Path, default=SOURCES, help="the _sources directory of the Python docs")
    ap.add_argument("--split", action="store_true", help="also run with chunks cut at the provider's input limit")
    ap.add_argument("--speed", action="store_true", help="also time embedding at batch sizes 8/16/32")
    ap.add_argument("--sweep", action="store_true", help="also min-max fusion at vector weights 0.5-0.9")
    args = ap.parse_args(argv)
    if not (args.sources / "faq").is_dir():
        print(
            f"benchmark data missing: {args.sources}/faq not found.\n"
            "Install Debian's Python documentation: apt-get install -y python3.11-doc",
            file=sys.stderr,
        )
        return 2
    if args.sweep:
        for w in (0.5, 0.6, 0.8, 0.9):
            FUSIONS[f"sweep: min-max {w:.1f}/{1 - w:.1f}"] = minmax(w)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {os.getloadavg()}")
    docs, querysets = build_dataset(args.sources)
    provider = LocalMiniLMProvider()
    variants: list[tuple[str, int | None]] = [("truncated", None)]
    if args.split:
        variants.append(("split", MAX_WORD_PIECES * 4))
    print(
        f"corpus: {len(docs)} docs, {sum(len(d.text) for d in docs):,} chars; "
        + ", ".join(f"{k}: {len(v)} queries" for k, v in querysets.items())
    )
    all_queries = [q for qs in querysets.values() for q, _ in qs]
    qmatrix, _ = embed_cached(provider, all_queries, "queries")
    for label, split_bytes in variants:
        texts, owner = chunk_docs(docs, split_bytes)
        matrix, spent = embed_cached(provider, texts, label)
        rate = f"{spent / len(texts) * 100:.2f} s per 100 chunks" if spent else "cached"
        print(f"\n## chunks {label}: {len(texts)} chunks, embedding {rate}")
        fts = Fts(texts)
        results: dict[str, Any] = {}
        offset = 0
        for name, queries in querysets.items():
            results[name] = evaluate(name, queries, texts, owner, matrix, qmatrix[offset : offset + len(queries)], fts)
            offset += len(queries)
        ft = sorted(fts.times)
        print(
            f"FTS5 top-{CANDIDATES}: p50 {ft[len(ft) // 2] * 1e3:.2f} ms, p95 {ft[int(len(ft) * 0.95)] * 1e3:.2f} ms\n"
        )
        print(table(results))
        if args.speed and label == "truncated":
            speed(provider, texts)
            print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
