"""Model request size: the JSON body a gateway sends for "hi" with the default tools, part by part.

Run with ``.venv/bin/python bench/prompt_bench.py [--json out.json]``. A ``homarus gateway run``
subprocess with a fresh state dir (so the workspace gets its default bootstrap files) and an
``openai-completions`` provider pointed at the loopback model server; one ``agent`` turn "hi"; the
recorded request body is split into the system prompt (and its sections), each tool's schema and
the messages. Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.agent_bench import http_config
from bench.agent_client import agent_params, agent_turn, gateway_with_config
from bench.harness import TOKEN, markdown_table, open_session

from bench.loopback_model import LoopbackModel  # isort: skip

TARGET_BYTES = 12_000  # the issue states it in kB (1000 bytes)


def _size(value: Any) -> int:
    return len(orjson.dumps(value))


def breakdown(body: bytes) -> dict[str, Any]:
    """Bytes of the request body by part: system prompt sections, tools, other messages, the rest."""
    req = json.loads(body)
    messages = req.get("messages", [])
    system = "".join(m.get("content", "") for m in messages if m.get("role") == "system")
    sections: dict[str, int] = {}
    # the system prompt's own sections are "## Title" headings; text before the first one is "preamble"
    parts = re.split(r"(?m)^(?=## )", system)
    for part in parts:
        if not part:
            continue
        title = part.splitlines()[0].lstrip("# ").strip() if part.startswith("## ") else "(preamble)"
        sections[title] = sections.get(title, 0) + len(part.encode())
    tools = {t["function"]["name"]: _size(t) for t in req.get("tools", [])}
    others = [m for m in messages if m.get("role") != "system"]
    text = system + "".join(json.dumps(t, ensure_ascii=False) for t in req.get("tools", [])) + json.dumps(others)
    return {
        "total": len(body),
        "tokens": _tokens(text),
        "estimate": math.ceil(len(text) / 4),
        "system": len(system.encode()),
        "systemSections": sections,
        "tools": tools,
        "toolsTotal": sum(tools.values()),
        "otherMessages": _size(others),
    }


def _tokens(text: str) -> int | None:
    """Tokens of ``text`` by the tokenizer the project installs (all-MiniLM-L6-v2's WordPiece, the
    local embeddings'): not any chat model's, but a fixed, offline yardstick. None when it is absent."""
    from homarus.memory.local_minilm import default_model_dir

    model_dir = default_model_dir()
    if model_dir is None:
        return None
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()  # the embedder cuts at 256 tokens; a prompt is counted whole
    return len(tokenizer.encode(text).ids)


async def _turn(gw: Any) -> None:
    ws = await open_session(gw.url, TOKEN)
    try:
        await agent_turn(ws, agent_params("hi", "bench-prompt"))
    finally:
        await ws.close()


def measure() -> bytes:
    llm = LoopbackModel()
    llm.start()
    gw = gateway_with_config(http_config(llm.base_url))
    try:
        gw.start()
        gw.wait_healthy()
        asyncio.run(_turn(gw))
        bodies = llm.requests()
    finally:
        gw.stop()
        gw.cleanup()
        llm.stop()
    if not bodies:
        raise SystemExit("the model saw no request")
    return bodies[0]


def report(r: dict[str, Any]) -> list[str]:
    rows = [["**request body, total**", f"{r['total']:,}", f"≤ {TARGET_BYTES:,}"]]
    tokens = f"{r['tokens']:,}" if r.get("tokens") is not None else "(tokenizer not installed)"
    rows.append(
        ["tokens: WordPiece (all-MiniLM-L6-v2) / the runtime's chars ÷ 4 estimate", f"{tokens} / {r['estimate']:,}", ""]
    )
    rows.append(["system prompt", f"{r['system']:,}", ""])
    rows += [[f"  § {name}", f"{size:,}", ""] for name, size in r["systemSections"].items()]
    rows.append(["tool schemas", f"{r['toolsTotal']:,}", ""])
    rows += [[f"  `{name}`", f"{size:,}", ""] for name, size in sorted(r["tools"].items(), key=lambda kv: -kv[1])]
    rows.append(["messages other than the system prompt", f"{r['otherMessages']:,}", ""])
    return markdown_table(["part", "bytes", "target"], rows)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--json", type=Path, help="also write the breakdown as JSON to this file")
    p.add_argument("--body", type=Path, help="also write the request body itself to this file")
    args = p.parse_args(argv)
    body = measure()
    if args.body:
        args.body.write_bytes(body)
    result = breakdown(body)
    print("\n".join(report(result)))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
