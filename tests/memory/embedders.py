"""Deterministic embedding providers for memory tests (no model, no network).

:class:`ConceptEmbedder` hashes a bag of *concepts* into a fixed number of signed buckets and
L2-normalises. Words are first mapped through a small synonym table, so "computer" and "host"
land in the same bucket: paraphrases with no word in common still get similar vectors, which is
what a real model gives and BM25 cannot. Tokens containing a digit are ignored, the way a small
sentence model blurs ticket numbers and hostnames: exact identifiers are BM25's job.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Mapping, Sequence

from homarus.memory.embedding import EmbeddingError, TaskType, normalize

__all__ = ["SYNONYMS", "ConceptEmbedder"]

SYNONYMS: dict[str, str] = {
    # machines
    "computer": "host", "machine": "host", "server": "host", "servers": "host", "box": "host", "hostname": "host",
    "node": "host",
    # the gateway
    "proxy": "gateway", "gateway": "gateway", "relay": "gateway",
    # running
    "runs": "run", "running": "run", "serves": "run", "hosts": "run", "serving": "run", "operates": "run",
    # databases
    "database": "db", "postgres": "db", "sqlite": "db", "datastore": "db",
    # people and preferences
    "like": "prefer", "likes": "prefer", "prefers": "prefer", "enjoy": "prefer", "favourite": "prefer",
    "favorite": "prefer", "enjoys": "prefer",
    "drink": "beverage", "coffee": "beverage", "tea": "beverage", "espresso": "beverage",
    # time
    "meeting": "meet", "meet": "meet", "sync": "meet", "standup": "meet", "call": "meet",
    # errors
    "crash": "fail", "crashed": "fail", "failure": "fail", "error": "fail", "broke": "fail", "broken": "fail",
    "outage": "fail", "down": "fail",
    # tickets
    "ticket": "issue", "bug": "issue", "issue": "issue",
    # travel
    "flight": "travel", "trip": "travel", "flies": "travel", "travelling": "travel", "vacation": "travel",
    "holiday": "travel",
    # money
    "budget": "money", "cost": "money", "price": "money", "spend": "money", "invoice": "money",
}  # fmt: skip

_WORD = re.compile(r"\w+")
_STOP = frozenset(
    {"a", "an", "the", "is", "are", "was", "were", "of", "to", "in", "on", "at", "for", "and", "or", "what"}
    | {"which", "who", "how", "does", "did", "do", "our", "we"}
)


class ConceptEmbedder:
    id = "test"
    max_input_tokens = 8192

    def __init__(
        self,
        *,
        dims: int = 128,
        model: str = "concept-hash-v1",
        synonyms: Mapping[str, str] | None = None,
        fail: bool = False,
        delay_s: float = 0.0,
        wrong_dims: bool = False,
    ) -> None:
        self.dims: int | None = dims
        self._size = dims
        self.model = model
        self.synonyms = dict(SYNONYMS if synonyms is None else synonyms)
        self.fail = fail
        self.delay_s = delay_s
        self.wrong_dims = wrong_dims
        #: one entry per embed() call: (number of texts, task)
        self.calls: list[tuple[int, TaskType]] = []
        self.texts_embedded = 0

    def concepts(self, text: str) -> list[str]:
        out = []
        for word in _WORD.findall(text.lower()):
            if word in _STOP or any(ch.isdigit() for ch in word):
                continue
            out.append(self.synonyms.get(word, word))
        return out

    def vector(self, text: str) -> list[float]:
        v = [0.0] * self._size
        for concept in self.concepts(text):
            digest = hashlib.blake2b(concept.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self._size
            v[bucket] += 1.0 if digest[4] & 1 else -1.0
        return normalize(v)

    async def embed(self, texts: Sequence[str], task: TaskType = "document") -> list[list[float]]:
        self.calls.append((len(texts), task))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail:
            raise EmbeddingError("test provider is down (HTTP 503)")
        self.texts_embedded += len(texts)
        vectors = [self.vector(t) for t in texts]
        if self.wrong_dims:
            vectors = [v[: self._size // 2] for v in vectors]
        return vectors

    async def aclose(self) -> None:
        return None
