"""The one HTTP error map: each surface family's body shape, and exceptions mapped to status,
type and Retry-After."""

from __future__ import annotations

import json
from typing import cast

import pytest

from homarus.errors import NotFound, RateLimited
from homarus.gateway.errors import Family, error_response, http_error_response


@pytest.mark.parametrize(
    ("family", "body"),
    [
        ("gateway", {"ok": False, "error": {"type": "not_found", "message": "Tool not available: x"}}),
        ("hooks", {"ok": False, "error": "Tool not available: x"}),
        ("openai", {"error": {"message": "Tool not available: x", "type": "not_found", "code": "nf"}}),
    ],
)
def test_json_families(family: str, body: dict[str, object]) -> None:
    res = error_response(cast(Family, family), 404, "Tool not available: x", kind="not_found", code="nf")
    assert res.status_code == 404 and res.headers["content-type"] == "application/json"
    assert json.loads(bytes(res.body)) == body


def test_plain_family_and_exceptions() -> None:
    res = error_response("plain", 405, "Method Not Allowed", headers={"Allow": "POST"})
    assert res.status_code == 405 and bytes(res.body) == b"Method Not Allowed" and res.headers["allow"] == "POST"
    limited = http_error_response(RateLimited("slow down", retry_after_ms=2500), "gateway")
    assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
    assert json.loads(bytes(limited.body))["error"]["message"] == "slow down"
    missing = http_error_response(NotFound("no such session"))
    assert missing.status_code == 404 and json.loads(bytes(missing.body)) == {
        "error": {"message": "no such session", "type": "not_found"}
    }
