from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from homarus.memory.search import (
    Candidate,
    apply_decay,
    bm25_score,
    citation,
    dated_file_age_days,
    decay_multiplier,
    fts_query,
    fuse,
    jaccard,
    mmr,
    query_terms,
    snippet,
)

NOW = datetime(2026, 3, 1, tzinfo=UTC).timestamp()


def _cand(
    seq: int, text: str = "", *, v: float | None = None, t: float | None = None, path: str = "MEMORY.md"
) -> Candidate:
    return Candidate(seq, path, "memory", 1, 1, text or f"chunk {seq}", v, t)


def test_bm25_mapping_uses_negative_ranks() -> None:
    # FTS5 ranks are negative; the early-2026 bug mapped all of them to 1.0
    assert bm25_score(-3.0) == pytest.approx(0.75)
    assert bm25_score(-1.0) == pytest.approx(0.5)
    assert bm25_score(-9.0) > bm25_score(-3.0) > bm25_score(-0.5)
    assert bm25_score(0.0) == 1.0
    assert bm25_score(1.0) == 0.5
    assert bm25_score(math.nan) == 0.001


def test_fts_query_quotes_terms_and_drops_stop_words() -> None:
    assert fts_query("What did we decide about the deploy?") == '"decide" OR "deploy"'
    assert fts_query("the") == '"the"'  # only stop words: keep them
    assert fts_query("   ") is None
    assert fts_query('*** -- "" ()') is None


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "NEAR(a b, 2)",
        "a* OR b*",
        "-x",
        "text:secret",
        "col:(a OR b)",
        "AND OR NOT",
        "^start",
        "a+b",
        "{x y}",
    ],
)
def test_fts_query_never_emits_fts_syntax(query: str) -> None:
    expr = fts_query(query)
    assert expr is not None
    for part in expr.split(" OR "):
        assert part.startswith('"') and part.endswith('"') and '"' not in part[1:-1]


def test_query_terms_are_bounded() -> None:
    terms = query_terms(" ".join(f"word{i}" for i in range(1000)) + " " + "z" * 500)
    assert len(terms) == 32
    assert all(len(t) <= 64 for t in query_terms("z" * 500))


def test_minmax_fusion_normalises_each_side() -> None:
    a = _cand(1, v=0.9, t=0.2)
    b = _cand(2, v=0.5)
    c = _cand(3, t=0.95)
    d = _cand(4, v=0.7, t=0.9)
    fuse([a, b, c, d], weights=(0.7, 0.3))
    # vectors 0.5..0.9 → 0..1, texts 0.2..0.95 → 0..1
    assert a.score == pytest.approx(0.7 * 1.0 + 0.3 * 0.0)
    assert b.score == pytest.approx(0.0)
    assert c.score == pytest.approx(0.3 * 1.0)
    assert d.score == pytest.approx(0.7 * 0.5 + 0.3 * (0.7 / 0.75))


def test_one_sided_fusion_is_not_capped_by_the_weight() -> None:
    only_v = [_cand(1, v=0.8), _cand(2, v=0.4)]
    fuse(only_v, weights=(0.7, 0.3))
    assert [c.score for c in only_v] == [pytest.approx(1.0), pytest.approx(0.0)]
    only_t = [_cand(1, t=0.9)]
    fuse(only_t, weights=(0.7, 0.3))
    assert only_t[0].score == pytest.approx(1.0)


def test_openclaw_fusion_is_the_raw_weighted_sum() -> None:
    a, b = _cand(1, v=0.6, t=0.9), _cand(2, t=0.9)
    fuse([a, b], weights=(0.7, 0.3), mode="openclaw")
    assert a.score == pytest.approx(0.42 + 0.27)
    assert b.score == pytest.approx(0.27)  # keyword-only: below minScore 0.35, the original's pitfall


def test_decay_halves_every_half_life() -> None:
    assert decay_multiplier(0, 30) == 1.0
    assert decay_multiplier(30, 30) == pytest.approx(0.5)
    assert decay_multiplier(60, 30) == pytest.approx(0.25)
    assert decay_multiplier(None, 30) == 1.0
    assert decay_multiplier(-5, 30) == 1.0  # future dates do not boost


def test_only_dated_memory_files_decay() -> None:
    assert dated_file_age_days("memory/2026-01-30.md", NOW) == pytest.approx(30)
    assert dated_file_age_days("memory/work/2026-02-28.md", NOW) == pytest.approx(1)
    assert dated_file_age_days("MEMORY.md", NOW) is None
    assert dated_file_age_days("memory.md", NOW) is None
    assert dated_file_age_days("memory/people.md", NOW) is None
    assert dated_file_age_days("memory/2026-02-30.md", NOW) is None  # not a date
    assert dated_file_age_days("notes/2026-01-01.md", NOW) is None  # not under memory/


def test_apply_decay_prefers_the_newer_restatement() -> None:
    old = _cand(1, path="memory/2025-12-01.md")
    new = _cand(2, path="memory/2026-02-20.md")
    ever = _cand(3, path="MEMORY.md")
    for c in (old, new, ever):
        c.score = 0.8
    apply_decay([old, new, ever], now=NOW, half_life_days=30)
    assert ever.score == 0.8
    assert new.score > old.score
    assert old.score == pytest.approx(0.8 * 0.5 ** (90 / 30))


def test_jaccard_edges() -> None:
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset({"a"}), frozenset()) == 0.0
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)


def test_mmr_pushes_near_duplicates_down() -> None:
    a = _cand(1, "deploy the gateway on friday with ana")
    b = _cand(2, "deploy the gateway on friday with ana please")
    c = _cand(3, "espresso is the preferred drink")
    d = _cand(4, "unrelated")
    a.score, b.score, c.score, d.score = 0.9, 0.88, 0.85, 0.1
    assert [x.seq for x in mmr([a, b, c, d], 1.0)] == [1, 2, 3, 4]
    reordered = mmr([a, b, c, d], 0.5)
    assert [x.seq for x in reordered] == [1, 3, 2, 4]
    assert [x.score for x in reordered] == [0.9, 0.85, 0.88, 0.1]  # scores unchanged


def test_mmr_tie_goes_to_higher_score() -> None:
    a, b = _cand(1, "alpha"), _cand(2, "beta")
    a.score = b.score = 0.5
    assert [x.seq for x in mmr([b, a], 0.7)] == [2, 1]  # all equal relevance: input order kept
    b.score = 0.6
    assert mmr([a, b], 0.7)[0].seq == 2


def test_snippet_and_citation() -> None:
    assert len(snippet("x" * 5000)) == 700
    assert snippet("short") == "short"
    assert citation("memory/a.md", 3, 19) == "memory/a.md#L3-L19"
    assert citation("memory/a.md", 5, 5) == "memory/a.md#L5"
