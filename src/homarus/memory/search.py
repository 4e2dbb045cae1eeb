"""The scoring half of memory search: pure functions over candidates, no I/O.

Pipeline (the manager feeds it): keyword candidates (FTS5 BM25) and vector candidates (cosine)
→ :func:`fuse` → :func:`apply_decay` → sort → :func:`mmr` → ``minScore`` → ``maxResults``.

Fusion. The original adds ``0.7·cosine + 0.3·rel/(1+rel)``. Its BM25 side saturates near 1 for any
decent match while cosine sits around 0.3-0.7, so the text weight shifts rankings almost
independently of keyword quality; measured on the reference's benchmark it scores *below*
vector-only on natural-language questions. Min-max normalising each retriever's candidate list
per query before weighting is the variant measured to beat both single retrievers on both sets,
so it is the default (``fusion="minmax"``); the original formula stays available for parity.
After fusion the scores of a min-max query lie in [0, 1] and ``minScore`` applies to them; when
only one retriever produced candidates, its normalised score is used unweighted so a one-sided
answer is not capped at that side's weight.

FTS query. The user's text never reaches FTS5 syntax: it is cut into word tokens, each quoted,
joined with OR (strict AND finds nothing for question-style queries). Stop words are dropped
unless nothing else remains, which keeps OR queries on large indexes fast.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

__all__ = [
    "SNIPPET_MAX_CHARS",
    "Candidate",
    "apply_decay",
    "bm25_score",
    "citation",
    "dated_file_age_days",
    "decay_multiplier",
    "fts_expression",
    "fts_query",
    "fuse",
    "jaccard",
    "mmr",
    "query_terms",
    "snippet",
    "words",
]

SNIPPET_MAX_CHARS = 700
MAX_QUERY_TERMS = 32
MAX_TERM_CHARS = 64

_WORD = re.compile(r"\w+")
_MMR_TOKEN = re.compile(r"[\w]+")
_DATED = re.compile(r"(?:^|/)memory/(?:[^/]+/)*(\d{4})-(\d{2})-(\d{2})\.md$")

# A short English list: enough to keep "what did we decide about the deploy" from OR-ing "the".
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not of off on once only or other our ours ourselves out over own same she should so some
    such than that the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your yours
    yourself yourselves""".split()  # noqa: SIM905 - a word list reads better as text
)


@dataclass(slots=True)
class Candidate:
    seq: int
    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    vector_score: float | None = None
    text_score: float | None = None
    score: float = 0.0
    extras: dict[str, float] = field(default_factory=dict)


# -- keyword side -----------------------------------------------------------------------------
def words(text: str) -> list[str]:
    """Lowercase word tokens as search sees them (an index without FTS5 stores these)."""
    return [t for t in (w.lower()[:MAX_TERM_CHARS] for w in _WORD.findall(text)) if t.strip("_")]


def query_terms(query: str) -> list[str]:
    """Distinct lowercase word tokens, stop words dropped unless they are all there is."""
    tokens = words(query)
    content = [t for t in tokens if t not in STOP_WORDS]
    return list(dict.fromkeys(content or tokens))[:MAX_QUERY_TERMS]


def fts_query(query: str) -> str | None:
    """A safe FTS5 expression (quoted terms OR-ed), or None when the query has no words."""
    return fts_expression(query_terms(query))


def fts_expression(terms: Sequence[str]) -> str | None:
    """``query_terms`` as an FTS5 expression, or None for no terms."""
    if not terms:
        return None
    # \w+ never contains '"', so quoting cannot be broken out of; NEAR/AND/* become plain terms
    return " OR ".join(f'"{t}"' for t in terms)


def bm25_score(rank: float) -> float:
    """FTS5 ``bm25()`` rank (negative, lower is better) → (0, 1), higher is better."""
    if not math.isfinite(rank):
        return 0.001
    if rank < 0:
        rel = -rank
        return rel / (1 + rel)
    return 1 / (1 + rank)


# -- fusion -----------------------------------------------------------------------------------
def _minmax(values: Sequence[float]) -> list[float]:
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        return [1.0] * len(values)
    return [(v - lo) / (hi - lo) for v in values]


def fuse(
    candidates: Sequence[Candidate],
    *,
    weights: tuple[float, float],
    mode: Literal["minmax", "openclaw"] = "minmax",
) -> None:
    """Set ``score`` on every candidate from its vector and text scores (a missing side counts 0)."""
    vw, tw = weights
    with_v = [c for c in candidates if c.vector_score is not None]
    with_t = [c for c in candidates if c.text_score is not None]
    if mode == "openclaw":
        for c in candidates:
            c.score = vw * (c.vector_score or 0.0) + tw * (c.text_score or 0.0)
        return
    nv = (
        dict(zip((id(c) for c in with_v), _minmax([c.vector_score or 0.0 for c in with_v]), strict=True))
        if with_v
        else {}
    )
    nt = (
        dict(zip((id(c) for c in with_t), _minmax([c.text_score or 0.0 for c in with_t]), strict=True))
        if with_t
        else {}
    )
    # one-sided answer (no keyword hit, or no vectors): that side alone, unweighted
    present = (vw if with_v else 0.0) + (tw if with_t else 0.0)
    scale = 1.0 / present if present > 0 else 1.0
    for c in candidates:
        c.score = scale * (vw * nv.get(id(c), 0.0) + tw * nt.get(id(c), 0.0))


# -- temporal decay ---------------------------------------------------------------------------
def dated_file_age_days(path: str, now: float) -> float | None:
    """Age of a ``memory/…/YYYY-MM-DD.md`` file from its name; None for evergreen files."""
    m = _DATED.search(path.replace("\\", "/"))
    if m is None:
        return None
    try:
        day = datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=UTC)
    except ValueError:
        return None
    return max(0.0, (now - day.timestamp()) / 86_400)


def decay_multiplier(age_days: float | None, half_life_days: float) -> float:
    if age_days is None:
        return 1.0
    return math.exp(-math.log(2) / max(1.0, half_life_days) * max(0.0, age_days))


def apply_decay(candidates: Sequence[Candidate], *, now: float, half_life_days: float) -> None:
    for c in candidates:
        m = decay_multiplier(dated_file_age_days(c.path, now), half_life_days)
        if m != 1.0:
            c.extras["decay"] = m
        c.score *= m


# -- MMR --------------------------------------------------------------------------------------
def _mmr_tokens(text: str) -> frozenset[str]:
    return frozenset(_MMR_TOKEN.findall(unicodedata.normalize("NFC", text.lower())))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def mmr(candidates: Sequence[Candidate], lam: float) -> list[Candidate]:
    """Re-order by maximal marginal relevance (Jaccard on snippet tokens); scores are unchanged.

    Candidates are expected sorted by score, best first; ``lam == 1`` keeps that order.
    """
    if len(candidates) < 2 or lam >= 1.0:
        return list(candidates)
    rel = _minmax([c.score for c in candidates])
    tokens = [_mmr_tokens(snippet(c.text)) for c in candidates]
    remaining = list(range(len(candidates)))
    chosen: list[int] = []
    while remaining:
        best_i, best_val = remaining[0], -math.inf
        for i in remaining:
            sim = max((jaccard(tokens[i], tokens[j]) for j in chosen), default=0.0)
            val = lam * rel[i] - (1 - lam) * sim
            if val > best_val + 1e-12 or (
                abs(val - best_val) <= 1e-12 and candidates[i].score > candidates[best_i].score
            ):
                best_i, best_val = i, val
        chosen.append(best_i)
        remaining.remove(best_i)
    return [candidates[i] for i in chosen]


# -- presentation -----------------------------------------------------------------------------
def snippet(text: str) -> str:
    return text if len(text) <= SNIPPET_MAX_CHARS else text[:SNIPPET_MAX_CHARS]


def citation(path: str, start_line: int, end_line: int) -> str:
    return f"{path}#L{start_line}" if start_line == end_line else f"{path}#L{start_line}-L{end_line}"
