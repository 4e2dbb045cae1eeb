"""HTTP/1.1 for the fake servers: one request off a stream (chunked or not), one response's bytes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

__all__ = ["Answer", "Route", "json_answer", "read_request", "response_bytes", "serve_requests"]

#: (status, body, extra headers, content type)
Answer = tuple[int, bytes, dict[str, str], str]
#: (method, target, headers, body) → the answer
Route = Callable[[str, str, dict[str, str], bytes], Answer]


def json_answer(body: Any, status: int = 200) -> Answer:
    """``body`` as a JSON answer."""
    return status, json.dumps(body).encode(), {}, "application/json; charset=utf-8"


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes]:
    """(method, target, lower-cased headers, body) of the next request on ``reader``."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while size := int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16):
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        await reader.readuntil(b"\r\n")
    else:
        body = await reader.readexactly(int(headers.get("content-length", "0")))
    return method, target, headers, body


def response_bytes(status: int, body: bytes, extra: dict[str, str], ctype: str) -> bytes:
    """A keep-alive response: status line, content type and length, ``extra`` headers, body."""
    phrase = HTTPStatus(status).phrase
    head = [f"HTTP/1.1 {status} {phrase}", f"content-type: {ctype}", f"content-length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in extra.items()]
    head.append("connection: keep-alive")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


async def serve_requests(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, route: Route) -> None:
    """Answer each request on a keep-alive connection with ``route``, until the client leaves."""
    try:
        while True:
            try:
                method, target, headers, body = await read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError, ValueError):
                return
            writer.write(response_bytes(*route(method, target, headers, body)))
            await writer.drain()
    finally:
        writer.close()
