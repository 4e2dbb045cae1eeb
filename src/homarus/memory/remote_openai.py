"""OpenAI ``POST /v1/embeddings``, and any server that speaks the same API (``openai-compatible``).

The answer's ``data`` items carry an ``index``; they are put back in input order by it, because the
API does not promise the order. ``openai-compatible`` needs a base URL and sends a key only when
one is configured (self-hosted servers often have none).
"""

from __future__ import annotations

from typing import Any

from homarus.memory.embedding import EmbeddingError, TaskType
from homarus.memory.remote import RemoteEmbeddingProvider, field

__all__ = ["OpenAICompatibleEmbeddings", "OpenAIEmbeddings"]


class OpenAIEmbeddings(RemoteEmbeddingProvider):
    id = "openai"
    default_model = "text-embedding-3-small"
    default_base_url = "https://api.openai.com/v1"
    max_input_tokens = 8192
    max_batch_items = 2048

    def build_request(self, texts: list[str], task: TaskType) -> tuple[str, dict[str, Any]]:
        return f"{self.base_url}/embeddings", {"model": self.model, "input": texts, "encoding_format": "float"}

    def extract_vectors(self, payload: Any) -> list[Any]:
        data = field(payload, "data", self.id)
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise EmbeddingError(f"{self.id} embeddings: 'data' is not a list of objects")
        if all(isinstance(item.get("index"), int) for item in data):
            data = sorted(data, key=lambda item: item["index"])
        return [field(item, "embedding", self.id) for item in data]


class OpenAICompatibleEmbeddings(OpenAIEmbeddings):
    id = "openai-compatible"
    key_required = False
