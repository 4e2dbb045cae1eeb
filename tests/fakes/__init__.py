"""Test doubles shared across the suite; see :mod:`tests.fakes.llm_server` for the fake LLM server."""

from __future__ import annotations

from tests.fakes.llm_server import FakeLLM, Garbage, HttpError, RecordedRequest, Reply, Step, run_fake_llm

__all__ = ["FakeLLM", "Garbage", "HttpError", "RecordedRequest", "Reply", "Step", "run_fake_llm"]
