from __future__ import annotations

import pytest
from pydantic import ValidationError

from homarus.config.agents import AgentsDefaults
from homarus.config.memory import MemorySearchConfig


def test_defaults_match_the_original() -> None:
    c = MemorySearchConfig()
    assert (c.enabled, c.provider, c.fallback, c.model) == (True, "auto", "none", "")
    assert (c.chunking.tokens, c.chunking.overlap) == (400, 80)
    assert (c.query.max_results, c.query.min_score) == (6, 0.35)
    h = c.query.hybrid
    assert h.enabled and h.weights == pytest.approx((0.7, 0.3)) and h.fusion == "minmax"
    assert c.query.candidates(6) == 24
    assert (h.mmr.enabled, h.mmr.lambda_) == (False, 0.7)
    assert (h.temporal_decay.enabled, h.temporal_decay.half_life_days) == (False, 30)
    assert (c.sync.on_session_start, c.sync.on_search, c.sync.watch, c.sync.watch_debounce_ms) == (
        True,
        True,
        True,
        1500,
    )
    assert c.sources == ("memory",) and c.store.vector.enabled and c.cache.enabled


def test_clamps() -> None:
    c = MemorySearchConfig.model_validate(
        {
            "chunking": {"tokens": 0, "overlap": 50},
            "query": {
                "maxResults": 0,
                "minScore": 1.7,
                "hybrid": {
                    "vectorWeight": 2,
                    "textWeight": -1,
                    "candidateMultiplier": 99,
                    "mmr": {"lambda": -0.5},
                    "temporalDecay": {"halfLifeDays": 0.2},
                },
            },
        }
    )
    assert (c.chunking.tokens, c.chunking.overlap) == (1, 0)
    assert (c.query.max_results, c.query.min_score) == (1, 1.0)
    assert c.query.hybrid.weights == (1.0, 0.0)
    assert c.query.hybrid.candidate_multiplier == 20
    assert c.query.candidates(100) == 200  # capped
    assert c.query.hybrid.mmr.lambda_ == 0.0
    assert c.query.hybrid.temporal_decay.half_life_days == 1
    zero = MemorySearchConfig.model_validate({"query": {"hybrid": {"vectorWeight": 0, "textWeight": 0}}})
    assert zero.query.hybrid.weights == (0.7, 0.3)


def test_unknown_keys_and_values_are_rejected() -> None:
    with pytest.raises(ValidationError):
        MemorySearchConfig.model_validate({"provider": "cohere"})
    with pytest.raises(ValidationError):
        MemorySearchConfig.model_validate({"query": {"hybrid": {"fusion": "rrf"}}})
    with pytest.raises(ValidationError):
        MemorySearchConfig.model_validate({"sorces": ["memory"]})


def test_extra_paths_are_deduplicated() -> None:
    c = MemorySearchConfig.model_validate({"extraPaths": ["notes", " notes ", "", "docs/a.md"]})
    assert c.extra_paths == ("notes", "docs/a.md")


def test_agents_defaults_carry_memory_search() -> None:
    d = AgentsDefaults.model_validate({"memorySearch": {"provider": "none", "query": {"maxResults": 3}}})
    assert d.memory_search.provider == "none" and d.memory_search.query.max_results == 3
    assert AgentsDefaults().memory_search == MemorySearchConfig()
