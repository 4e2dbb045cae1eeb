"""The reference's "complementary" test: a generated memory workspace where each retriever has
queries only it can answer, and hybrid must do at least as well as the better one overall.

* identifiers (ticket numbers, hosts, config keys): the test embedder ignores tokens with digits,
  like a small sentence model blurs them, so only BM25 can tell ``TCK-4059`` from ``TCK-4096``;
* paraphrases with no word in common with the fact ("which machine serves the proxy" → "host
  gw-3 runs the gateway"): only the embedder's synonym concepts connect them, and distractors
  contain the query's literal words so BM25 ranks the wrong note first;
* mixed queries carry both kinds of signal.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from statistics import fmean

import pytest

from homarus.memory.manager import MemoryManager
from homarus.memory.results import SearchResult
from tests.memory.conftest import ManagerFactory
from tests.memory.embedders import ConceptEmbedder

NOW = datetime(2026, 3, 5, tzinfo=UTC).timestamp()
FILLER = [
    "Walked to the bakery before lunch.",
    "Reviewed the quarterly roadmap slides.",
    "Cleaned up the shared drive.",
    "Watered the plants in the office.",
    "Read a chapter about typography.",
    "Sorted the inbox by sender.",
    "Paired on refactoring the parser module.",
    "Renewed the library card.",
    "Drafted notes for the retro.",
]


@dataclass(frozen=True)
class Case:
    kind: str
    query: str
    fact: str


def _cases() -> list[Case]:
    cases: list[Case] = []
    topics = ["checkout", "login", "search", "billing", "avatar", "export", "calendar", "upload", "theme", "sharing"]
    for i, topic in enumerate(topics):
        n = 4000 + i * 37
        cases.append(Case("identifier", f"what is ticket TCK-{n} about", f"Ticket TCK-{n} concerns the {topic} page."))
    for key, value in [("max_inflight_requests", 64), ("retry_budget_ms", 2500), ("wal_autocheckpoint", 1000)]:
        cases.append(Case("identifier", f"value of {key}", f"Config key {key} was set to {value} in staging."))
    paraphrases = [
        ("which machine serves the proxy", "Host gw-3 runs the gateway."),
        ("which coffee does she enjoy", "Ana prefers espresso."),
        ("when did the datastore fail", "The postgres database crashed on Tuesday."),
        ("upcoming trip to Portugal", "Flight to Lisbon booked for March."),
        ("how much do we spend on servers", "Invoice from Hetzner is 49 EUR per month."),
        ("when is the team meeting now", "Weekly standup moved to Thursday."),
        ("proxy host outage", "The relay node went down after the upgrade."),
        ("issue with the datastore layer", "Bug in the sqlite adapter reported by Tom."),
    ]
    cases += [Case("paraphrase", q, f) for q, f in paraphrases]
    mixed = [
        ("which machine is cache-42", "Server cache-42 hosts the redis replica for billing."),
        ("database box db-17 crashed", "Postgres on db-17 crashed twice during the migration."),
        ("budget for vendor ACME-7", "Invoice from ACME-7 exceeded the agreed price."),
        ("travel plans with flight LX-318", "Trip to Zurich on flight LX-318 next Friday."),
    ]
    cases += [Case("mixed", q, f) for q, f in mixed]
    return cases


DISTRACTORS = [
    "The coffee machine on floor two was repaired; she said the proxy settings of the browser were fine.",
    "Ticket TCK-4096 and TCK-4059 were closed as duplicates.",
    "The team discussed when to spend the remaining servers budget upgrade.",
    "Datastore layer naming: we call it the store, not the datastore.",
    "Trip report draft is upcoming; Portugal was mentioned as a conference venue idea.",
    "Host names follow the pattern role-number, for example cache-7 and db-23.",
    "A flight of stairs leads to the meeting room.",
]


def _build(ws: Path) -> list[Case]:
    rng = random.Random(7)
    cases = _cases()
    texts = [c.fact for c in cases] + DISTRACTORS
    days = [date(2026, 1, 1) + timedelta(days=i) for i in range(60)]
    slots: dict[date, list[str]] = {d: [] for d in days}
    for i, text in enumerate(texts):
        slots[days[(i * 7) % 60]].append(text)
    for d in days:
        body = [f"# {d.isoformat()}"] + rng.sample(FILLER, 3) + slots[d]
        (ws / "memory" / f"{d.isoformat()}.md").write_text("\n".join(body) + "\n")
    (ws / "MEMORY.md").write_text("# Long-term memory\nThe user's name is Sam.\nSam lives in Berlin.\n")
    return cases


def _rr(results: list[str], relevant: str) -> float:
    for rank, snippet in enumerate(results, 1):
        if relevant in snippet:
            return 1.0 / rank
    return 0.0


async def _mrr(m: MemoryManager, cases: list[Case], *, min_score: float = 0.0) -> dict[str, float]:
    per_kind: dict[str, list[float]] = {}
    for c in cases:
        resp = await m.search(c.query, max_results=6, min_score=min_score)
        per_kind.setdefault(c.kind, []).append(_rr([r.snippet for r in resp.results], c.fact))
    out = {k: fmean(v) for k, v in per_kind.items()}
    out["all"] = fmean([x for v in per_kind.values() for x in v])
    return out


@pytest.mark.both_backends
async def test_hybrid_beats_each_retriever(ws: Path, make_manager: ManagerFactory, tmp_path: Path) -> None:
    cases = _build(ws)
    bm25 = make_manager(None, db_path=tmp_path / "bm25.sqlite", clock=lambda: NOW)
    vector = make_manager(
        ConceptEmbedder(), {"query": {"hybrid": {"enabled": False}}}, db_path=tmp_path / "vec.sqlite", clock=lambda: NOW
    )
    hybrid = make_manager(ConceptEmbedder(), db_path=tmp_path / "hyb.sqlite", clock=lambda: NOW)
    for m in (bm25, vector, hybrid):
        await m.sync()
    scores = {name: await _mrr(m, cases) for name, m in (("bm25", bm25), ("vector", vector), ("hybrid", hybrid))}
    print(scores)
    # each retriever has a class it owns, so the single retrievers are far from perfect
    assert scores["bm25"]["identifier"] > scores["vector"]["identifier"] + 0.3
    assert scores["vector"]["paraphrase"] > scores["bm25"]["paraphrase"] + 0.3
    assert scores["hybrid"]["all"] >= max(scores["bm25"]["all"], scores["vector"]["all"]) + 0.05
    for kind in ("identifier", "paraphrase", "mixed"):
        weaker = min(scores["bm25"][kind], scores["vector"][kind])
        assert scores["hybrid"][kind] >= weaker, kind
    # the default threshold must not throw the keyword-found answers away (the original's pitfall)
    with_default = await _mrr(hybrid, cases, min_score=0.35)
    assert with_default["all"] >= max(scores["bm25"]["all"], scores["vector"]["all"])


@pytest.mark.both_backends
async def test_temporal_decay_prefers_the_newer_fact_and_spares_memory_md(
    ws: Path, make_manager: ManagerFactory
) -> None:
    (ws / "memory" / "2026-01-10.md").write_text("The deploy freeze ends on the tenth.\n")
    (ws / "memory" / "2026-02-20.md").write_text("The deploy freeze ends on the twentieth.\n")
    (ws / "MEMORY.md").write_text("Deploy freeze rules: it ends when the release ships.\n")
    for day, line in ((11, "Lunch at the new ramen place."), (12, "Bought a new keyboard."), (13, "Gym at six.")):
        (ws / "memory" / f"2026-01-{day}.md").write_text(line + "\n")
    config = {"query": {"hybrid": {"temporalDecay": {"enabled": True}}}}
    far_future = datetime(2027, 1, 1, tzinfo=UTC).timestamp()
    m = make_manager(ConceptEmbedder(), config, clock=lambda: NOW)
    await m.sync()
    results = (await m.search("deploy freeze ends", min_score=0)).results
    assert "twentieth" in results[0].snippet
    older = next(r for r in results if "tenth" in r.snippet)
    newer = next(r for r in results if "twentieth" in r.snippet)
    assert newer.score > older.score
    late = make_manager(ConceptEmbedder(), config, clock=lambda: far_future, db_path=ws.parent / "late.sqlite")
    await late.sync()
    late_results = (await late.search("deploy freeze ends", min_score=0)).results
    assert late_results[0].path == "MEMORY.md"  # evergreen: ten months later the dated notes have faded
    undecayed = make_manager(ConceptEmbedder(), {}, clock=lambda: far_future, db_path=ws.parent / "plain.sqlite")
    await undecayed.sync()
    plain_results = (await undecayed.search("deploy freeze ends", min_score=0)).results
    assert _score_of(late_results, "MEMORY.md") == _score_of(plain_results, "MEMORY.md")


def _score_of(results: tuple[SearchResult, ...], path: str) -> float:
    return next(r.score for r in results if r.path == path)
