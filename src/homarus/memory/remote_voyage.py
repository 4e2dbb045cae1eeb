"""Voyage AI ``POST /v1/embeddings`` with ``input_type`` query or document.

Voyage prepends a retrieval prompt according to ``input_type``, so queries and documents must be
told apart. The answer has the OpenAI shape (``data[].embedding`` with ``index``).
"""

from __future__ import annotations

from typing import Any

from homarus.memory.embedding import TaskType
from homarus.memory.remote_openai import OpenAIEmbeddings

__all__ = ["VoyageEmbeddings"]


class VoyageEmbeddings(OpenAIEmbeddings):
    id = "voyage"
    default_model = "voyage-4-large"
    default_base_url = "https://api.voyageai.com/v1"
    #: the voyage-3 generation and later take 32k tokens per input
    max_input_tokens = 32000
    max_batch_items = 1000

    def build_request(self, texts: list[str], task: TaskType) -> tuple[str, dict[str, Any]]:
        return f"{self.base_url}/embeddings", {"model": self.model, "input": texts, "input_type": task}
