"""Browser tool: cold start, ``open`` and ``snapshot`` latency on a mid-size page, memory.

Run with ``.venv/bin/python bench/browser_bench.py [--runs N]``. A page of 300 paragraphs, 200
links, 40 form fields and a table is served on loopback (allowed in ``browser.ssrf.allow``). Each
run starts a fresh ``BrowserHub`` (cold start = the first ``open``: Playwright's driver, Chromium,
the profile, the page), then times a warm ``open`` and ``snapshot`` N times. Memory: this Python
process's RSS with the browser open, and Chromium's own processes (summed) reported separately.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

PAGE = (
    "<title>Mid-size</title><h1>Bench</h1>"
    + "".join(f"<p>Paragraph {i} with some words to read through, number {i}.</p>" for i in range(300))
    + "".join(f"<a href='/p{i}'>Link {i}</a> " for i in range(200))
    + "".join(f"<label>Field {i}<input name=f{i}></label>" for i in range(40))
    + "<table>"
    + "".join(f"<tr><td>r{i}</td><td>v{i}</td></tr>" for i in range(100))
    + "</table>"
).encode()


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def _rss_mib(pids: list[int]) -> float:
    import psutil

    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


async def main() -> None:
    import psutil

    from homarus.browser.manager import BrowserHub
    from homarus.browser.tool import make_browser_tool
    from homarus.config.browser import BrowserConfig
    from homarus.tools.base import ToolContext

    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    me = psutil.Process()
    base_rss = me.memory_info().rss / 2**20
    with tempfile.TemporaryDirectory() as state:
        hub = BrowserHub(BrowserConfig.model_validate({"ssrf": {"allow": ["127.0.0.1"]}}), Path(state))
        tool = make_browser_tool(lambda: hub)
        ctx = ToolContext("bench", "main", "r", "c", Path(state))
        t0 = time.perf_counter()
        await tool.execute(ctx, {"action": "open", "url": url})
        cold = (time.perf_counter() - t0) * 1000
        opens, snaps, size = [], [], 0
        for _ in range(runs):
            t0 = time.perf_counter()
            await tool.execute(ctx, {"action": "open", "url": url})
            opens.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            result = await tool.execute(ctx, {"action": "snapshot"})
            snaps.append((time.perf_counter() - t0) * 1000)
            size = len(getattr(result.content[0], "text", ""))
        chromium = [p.pid for p in me.children(recursive=True) if "chrom" in p.name().lower()]
        others = [p.pid for p in me.children(recursive=True) if p.pid not in chromium]
        print("| measure | value |")
        print("| --- | --- |")
        print(f"| cold start (first open) | {cold:.0f} ms |")
        print(f"| warm open, p50 / max | {statistics.median(opens):.1f} / {max(opens):.1f} ms |")
        print(f"| snapshot, p50 / max | {statistics.median(snaps):.1f} / {max(snaps):.1f} ms ({size} chars) |")
        print(
            f"| this process RSS, before / with the browser | {base_rss:.0f} / {me.memory_info().rss / 2**20:.0f} MiB |"
        )
        print(f"| Playwright driver (node) RSS | {_rss_mib(others):.0f} MiB |")
        print(f"| Chromium processes RSS (sum, {len(chromium)} processes) | {_rss_mib(chromium):.0f} MiB |")
        await hub.stop()
    server.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
