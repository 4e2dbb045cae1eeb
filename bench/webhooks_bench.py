"""Webhook ingress benchmark: `POST /hooks/wake` throughput and latency, `/hooks/agent` acceptance latency.

Run with ``.venv/bin/python bench/webhooks_bench.py [--total N] [--procs N]`` (``make bench`` runs it).
One gateway process (``homarus gateway run``, fresh state dir with ``hooks.enabled`` and the default
scripted model, removed at the end) is loaded with keep-alive connections, one request in flight each,
from ``--procs`` client processes sending pre-built HTTP/1.1 bytes (the raw client of
``tools_invoke_bench``), at 8, 16 and 32 concurrent connections:

* ``/hooks/wake`` with ``mode: next-heartbeat`` (auth, body, a system event queued; 200);
* ``/hooks/agent`` (auth, body, policy, the run journaled in SQLite before the 202; the run itself
  then executes in the background, so this measures acceptance, not the model turn).

The original answers ``/hooks/wake`` at about 5,000 req/s on this machine class (bench target ≥ 6,000).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import tools_invoke_bench as tib  # after the sys.path line above
from bench.harness import GatewayProcess, markdown_table

HOOK_TOKEN = "bench-hook-token-0123456789"


def _request(port: int, path: str, body: dict[str, Any]) -> bytes:
    raw = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {HOOK_TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n"
    )
    return head.encode() + raw


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--total", type=int, default=20_000, help="requests per row (wake)")
    ap.add_argument("--agent-total", type=int, default=2_000, help="requests per row (agent)")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--max-seconds", type=float, default=30.0)
    args = ap.parse_args()
    gw = GatewayProcess(log_level="warning")
    config = {"hooks": {"enabled": True, "token": HOOK_TOKEN}, "agents": {"defaults": {"heartbeat": {"every": "0m"}}}}
    config_file = gw.workdir / "homarus.json"
    config_file.write_text(json.dumps(config))
    gw.env_overrides["HOMARUS_CONFIG"] = str(config_file)
    rows: list[list[str]] = []
    try:
        gw.start()
        gw.wait_healthy()
        for path, body, total, expect in (
            ("/hooks/wake", {"text": "ping", "mode": "next-heartbeat"}, args.total, 200),
            ("/hooks/agent", {"message": "bench", "deliver": False}, args.agent_total, 202),
        ):
            for conc in (8, 16, 32):
                ns = argparse.Namespace(procs=args.procs, concurrency=conc, total=total, max_seconds=args.max_seconds)
                original = tib.request_bytes
                # load_raw builds its request bytes with this module function: point it at our path
                setattr(tib, "request_bytes", lambda port, _body, p=path, b=body: _request(port, p, b))  # noqa: B010
                try:
                    r = tib.load_raw(gw, b"", ns, expect)
                finally:
                    setattr(tib, "request_bytes", original)  # noqa: B010
                rows.append(
                    [
                        path,
                        str(conc),
                        f"{r['requests']:,}",
                        f"{r['rps']:,.0f}",
                        f"{r['p50_ms']:.2f}",
                        f"{r['p95_ms']:.2f}",
                        f"{r['server_cpu_ms_per_req'] * 1000:.0f}",
                        str(r["errors"]),
                    ]
                )
    finally:
        gw.cleanup()
    header = ["endpoint", "connections", "requests", "req/s", "p50 ms", "p95 ms", "server CPU µs/req", "errors"]
    print("\n".join(markdown_table(header, rows)))


if __name__ == "__main__":
    main()
