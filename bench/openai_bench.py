"""`POST /v1/chat/completions` streaming benchmark: time to first token and tokens/s.

Run with ``.venv/bin/python bench/openai_bench.py [--runs N] [--json out.json]``. One gateway
subprocess (fresh state dir, removed at the end whatever happens) with the chat-completions
endpoint on and a scripted model that echoes the user's message (so the request carries the
reply's text, and the config stays small): the model costs nothing, so the numbers are the
gateway's own path — run start, agent loop, ``agent`` events through the
event bus, SSE chunks — as an OpenAI client sees it.

Cases: a short reply (64 chars) and a long one (4,000 chars, ~1,000 tokens, streamed by the
scripted provider in 8-character deltas), each with one stream at a time and with 4 concurrent
streams. Per request: time to first token (request sent → first ``delta.content``), total time,
and tokens/s of the stream (``usage.completion_tokens`` from ``stream_options.include_usage``
over first → last content chunk). "agg tok/s" is all streams' tokens over the wall time of the case.
Server CPU per request is the gateway process's CPU time delta over the case.

The endpoint's routes are mounted by this script's ``--serve`` mode (the gateway CLI plus
``openai_routes``) so the benchmark runs whether or not ``server._routes`` lists them yet.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # after the sys.path line above
    HOST,
    TOKEN,
    GatewayProcess,
    bench_main,
    free_port,
    machine_facts,
    machine_footer,
    markdown_table,
    percentile,
    progress,
)

SHORT = "Short answer: yes. " * 3 + "Done."
LONG = ("The gateway streams every delta of the reply as an SSE chunk to the client. " * 53)[:4000]
CASES: tuple[tuple[str, str, int], ...] = (
    ("short, 1 stream", SHORT, 1),
    ("short, 4 streams", SHORT, 4),
    ("long, 1 stream", LONG, 1),
    ("long, 4 streams", LONG, 4),
)


def serve(argv: Sequence[str]) -> int:
    """The gateway CLI (kept as an entry point so the bench can start it the same way as before)."""
    from homarus.cli.main import main

    return main(list(argv))


@dataclass
class OpenAIGateway(GatewayProcess):
    def start(self) -> None:
        state = self.workdir / "state"
        state.mkdir()
        env = {**os.environ, "HOMARUS_STATE_DIR": str(state)}
        env.pop("HOMARUS_GATEWAY_TOKEN", None)
        env.update({k: v for k, v in self.env_overrides.items() if v is not None})
        self.port = free_port()
        cmd = [sys.executable, str(Path(__file__).resolve()), "--serve", "gateway", "run", "--bind", "loopback"]
        cmd += ["--port", str(self.port), "--token", TOKEN]
        with open(self.workdir / "gateway.log", "wb") as log:
            self.spawned_at = time.perf_counter()
            self.proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def config() -> dict[str, Any]:
    return {
        "models": {"providers": {"bench": {"api": "scripted", "models": [{"id": "m"}], "script": []}}},
        "agents": {"defaults": {"model": {"primary": "bench/m"}}},
        "gateway": {"http": {"endpoints": {"chatCompletions": {"enabled": True}}}},
    }


@dataclass
class Sample:
    ttft_ms: float
    total_ms: float
    tokens: int
    stream_s: float
    text: str


async def one(client: httpx.AsyncClient, reply: str) -> Sample:
    body = {
        "model": "homarus",
        "messages": [{"role": "user", "content": reply}],  # echoed back by the scripted model
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    t0 = time.perf_counter()
    first = last = 0.0
    tokens = 0
    parts: list[str] = []
    async with client.stream("POST", "/v1/chat/completions", json=body) as resp:
        resp.raise_for_status()
        async for line in resp.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = int(chunk["usage"]["completion_tokens"])
            for choice in chunk.get("choices", []):
                content = choice.get("delta", {}).get("content")
                if content:
                    last = time.perf_counter()
                    first = first or last
                    parts.append(content)
    end = time.perf_counter()
    return Sample((first - t0) * 1000, (end - t0) * 1000, tokens, max(last - first, 1e-9), "".join(parts))


async def run_case(port: int, reply: str, streams: int, runs: int, gw: GatewayProcess) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    async with httpx.AsyncClient(base_url=f"http://{HOST}:{port}", headers=headers, limits=limits, timeout=60) as c:
        cpu0, t0 = gw.cpu_seconds(), time.perf_counter()
        samples: list[Sample] = []
        for batch in range(0, runs, streams):
            samples += await asyncio.gather(*(one(c, reply) for _ in range(min(streams, runs - batch))))
        wall, cpu = time.perf_counter() - t0, gw.cpu_seconds() - cpu0
    wrong = sum(s.text != reply for s in samples)
    if wrong:
        raise RuntimeError(f"{wrong} replies differ from the script")
    per_stream = [s.tokens / s.stream_s for s in samples if s.stream_s > 1e-6 and len(reply) > 64]
    ttft = [s.ttft_ms for s in samples]
    total = [s.total_ms for s in samples]
    return {
        "n": len(samples),
        "ttft_p50": percentile(ttft, 50),
        "ttft_p95": percentile(ttft, 95),
        "total_p50": percentile(total, 50),
        "tokens": samples[0].tokens,
        "tok_s_p50": percentile(per_stream, 50) if per_stream else None,
        "agg_tok_s": sum(s.tokens for s in samples) / wall,
        "cpu_ms_per_req": cpu * 1000 / len(samples),
    }


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    gw = OpenAIGateway()
    (gw.workdir / "homarus.json").write_text(json.dumps(config()), encoding="utf-8")
    gw.env_overrides = {"HOMARUS_CONFIG": str(gw.workdir / "homarus.json")}
    load_before = os.getloadavg()
    results: dict[str, Any] = {"machine": machine_facts(), "runs": args.runs, "cases": {}}
    try:
        gw.start()
        gw.wait_healthy()
        for name, reply, streams in CASES:
            progress("case %s", name)
            if args.warmup:
                asyncio.run(run_case(gw.port, reply, streams, args.warmup, gw))
            results["cases"][name] = asyncio.run(run_case(gw.port, reply, streams, args.runs, gw))
    finally:
        gw.cleanup()
    results["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results["loadavg_before"] = load_before
    results["loadavg_after"] = os.getloadavg()
    return results


def render(r: dict[str, Any]) -> str:
    rows = []
    for name, c in r["cases"].items():
        tok_s = f"{c['tok_s_p50']:,.0f}" if c["tok_s_p50"] else "—"
        rows.append(
            [
                name,
                str(c["n"]),
                str(c["tokens"]),
                f"{c['ttft_p50']:.1f}",
                f"{c['ttft_p95']:.1f}",
                f"{c['total_p50']:.1f}",
                tok_s,
                f"{c['agg_tok_s']:,.0f}",
                f"{c['cpu_ms_per_req']:.1f}",
            ]
        )
    header = ["case", "n", "tokens", "TTFT p50 ms", "TTFT p95 ms", "total p50 ms", "tok/s per stream p50"]
    header += ["agg tok/s", "server CPU ms/req"]
    return "\n".join([*markdown_table(header, rows), *machine_footer(r)])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--runs", type=int, default=40, help="requests per case (default 40)")
    p.add_argument("--warmup", type=int, default=4, help="unmeasured requests per case first (default 4)")
    p.add_argument("--json", type=Path, default=None, help="also write the results as JSON here")
    return p.parse_args(argv)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        raise SystemExit(serve(sys.argv[2:]))
    raise SystemExit(bench_main(None, parse_args, run_bench, render))
