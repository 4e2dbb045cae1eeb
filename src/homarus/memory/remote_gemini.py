"""Google Gemini ``models/<model>:batchEmbedContents`` with retrieval task types.

Queries are embedded as ``RETRIEVAL_QUERY`` and documents as ``RETRIEVAL_DOCUMENT``: the model
places the two differently, which is the point of asymmetric retrieval. The key travels in the
``x-goog-api-key`` header, not in the ``?key=`` query string, so it never ends up in a logged URL.
"""

from __future__ import annotations

from typing import Any

from homarus.memory.embedding import EmbeddingError, TaskType
from homarus.memory.remote import RemoteEmbeddingProvider, field

__all__ = ["GeminiEmbeddings"]

_TASK = {"query": "RETRIEVAL_QUERY", "document": "RETRIEVAL_DOCUMENT"}


class GeminiEmbeddings(RemoteEmbeddingProvider):
    id = "gemini"
    default_model = "gemini-embedding-001"
    default_base_url = "https://generativelanguage.googleapis.com/v1beta"
    max_input_tokens = 2048
    #: batchEmbedContents takes at most 100 requests
    max_batch_items = 100

    def normalize_model(self, model: str) -> str:
        for prefix in ("models/", "gemini/"):
            model = model.removeprefix(prefix)
        return model

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"x-goog-api-key": api_key}

    def build_request(self, texts: list[str], task: TaskType) -> tuple[str, dict[str, Any]]:
        name = f"models/{self.model}"
        requests = [{"model": name, "content": {"parts": [{"text": t}]}, "taskType": _TASK[task]} for t in texts]
        return f"{self.base_url}/{name}:batchEmbedContents", {"requests": requests}

    def extract_vectors(self, payload: Any) -> list[Any]:
        items = field(payload, "embeddings", self.id)
        if not isinstance(items, list):
            raise EmbeddingError(f"{self.id} embeddings: 'embeddings' is not a list")
        return [field(item, "values", self.id) for item in items]
