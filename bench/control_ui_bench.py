"""Control UI: first paint and time to a usable page in headless Chromium; screenshots for the docs.

Run with ``.venv/bin/python bench/control_ui_bench.py [--runs N] [--screenshots DIR] [--json out.json]``.
Needs ``/usr/bin/chromium`` (``scripts/system-deps.sh``) and the ``playwright`` package (dev extra);
no browser is downloaded.

A gateway runs in this process (loopback, scripted model, fresh state dir removed at the end) with
a little demo content: a conversation with a tool call, a few labelled sessions and one pending
exec approval. Then, per run, a fresh browser context (empty cache, token already in
localStorage) opens ``/`` and the page's own Navigation/Paint Timing is read:

* ``first-contentful-paint``: the shell (top bar, layout) is on screen;
* ``DOMContentLoaded`` / ``load``: HTML, CSS and the ES modules are in;
* ``ready``: connected, hello received, sessions + approvals + transcript loaded and rendered
  (``#app[data-ready]``, measured as ``performance.now()`` right after it appears).

"warm" repeats the measurement with a reload in the same context (ETag revalidation: 304s).
With ``--screenshots`` the main views are saved as PNG files for the README.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.webui.harness import Served, served
from tests.wsclient import open_client

from bench.harness import machine_facts, markdown_table, percentile  # after the sys.path line above
from homarus.providers.scripted import Reply, ScriptedProvider

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
TOKEN = "bench-ui-token-0123456789abcdef"
CONFIG: dict[str, Any] = {
    "models": {"providers": {"demo": {"api": "scripted", "models": [{"id": "assistant"}]}}},
    "agents": {"defaults": {"model": {"primary": "demo/assistant"}}},
    "tools": {"exec": {"security": "allowlist", "allowlist": ["df", "echo", "ls"], "ask": "on-miss"}},
}
ANSWER = """The root filesystem is the one to watch; the full table is in the tool output above.

To see what is taking the space in your home directory:

```bash
du -sh ~/* 2>/dev/null | sort -h | tail -n 5
```

- **Caches** (`~/.cache`) are usually safe to clear.
- Old *virtualenvs* and `node_modules` folders add up quickly.

More on [du(1)](https://man7.org/linux/man-pages/man1/du.1.html)."""


async def _demo_content(gw: Served, provider: ScriptedProvider) -> None:
    client = await open_client(f"ws://127.0.0.1:{gw.port}")
    assert (await client.handshake(TOKEN, caps=["tool-events"]))["ok"]

    async def chat(key: str, text: str, run_id: str) -> None:
        params = {"sessionKey": key, "message": text, "idempotencyKey": run_id}
        assert (await client.request("chat.send", params))["ok"]
        while True:
            ev = await client.event("chat", timeout=30)
            if ev["payload"]["runId"] == run_id and ev["payload"]["state"] in ("final", "error", "aborted"):
                return

    provider.push(
        Reply("Let me look at the disks.", tool_calls=[("exec", {"command": "df -h /"})]),
        Reply(ANSWER),
    )
    await chat("agent:main:main", "How much disk space is left?", "demo-1")
    for label, text, reply in (
        (
            "Trip to Lisbon",
            "What should I look for in a place to work from for a week?",
            "Three things matter most for a work week away:\n\n1. **Quiet hours**: ask when the place is busiest.\n"
            "2. **Reliable Wi-Fi**: run a speed test on the first morning, not the last.\n"
            "3. **A second spot**: a library or café nearby for when the first is full.",
        ),
        (
            "Refactor parser",
            "How do I find functions without tests?",
            "Run the suite with coverage and list what was never executed:\n\n"
            "```bash\npytest --cov=parser --cov-report=term-missing\n```\n\n"
            "Lines marked *missing* are your candidates.",
        ),
        ("Weekly report", "Draft the weekly report from my notes.", "Here is a first draft; tell me what to cut."),
    ):
        res = await client.request("sessions.create", {"label": label})
        assert res["ok"], res
        provider.push(Reply(reply))
        await chat(res["payload"]["key"], text, f"demo-{label}")
    job = {
        "name": "Morning briefing",
        "schedule": {"kind": "cron", "expr": "0 7 * * 1-5", "tz": "Europe/Lisbon"},
        "sessionTarget": "isolated",
        "wakeMode": "now",
        "payload": {"kind": "agentTurn", "message": "Summarise my calendar and unread mail."},
    }
    await client.request("cron.add", job)  # shown on the status page when this gateway has cron
    # one run that needs an operator: its approval stays pending for the screenshots
    provider.push(Reply("", tool_calls=[("exec", {"command": "rm -rf build/ && make release"})]), Reply("Done."))
    params = {"sessionKey": "agent:main:release", "message": "Cut a release build.", "idempotencyKey": "demo-rel"}
    assert (await client.request("chat.send", params))["ok"]
    await client.event("exec.approval.requested", timeout=30)
    # keep this client (an approver) connected until the end, so the approval stays pending
    gw.demo_client = client  # type: ignore[attr-defined]


def _measure(page: Any, url: str, *, reload: bool) -> dict[str, float]:
    if reload:
        page.reload()
    else:
        page.goto(url)
    page.wait_for_selector("#app[data-ready]")
    ready = float(page.evaluate("performance.now()"))
    timing = page.evaluate(
        """() => {
          const nav = performance.getEntriesByType("navigation")[0];
          const paint = Object.fromEntries(performance.getEntriesByType("paint").map(p => [p.name, p.startTime]));
          return {fcp: paint["first-contentful-paint"] ?? NaN, fp: paint["first-paint"] ?? NaN,
                  dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, bytes: nav.transferSize};
        }"""
    )
    return {**{k: float(v) for k, v in timing.items()}, "ready": ready}


def _screenshots(browser: Any, gw: Served, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 800}, device_scale_factor=1)
    context.add_init_script(f"localStorage.setItem('homarus.token', {json.dumps(TOKEN)})")
    page = context.new_page()
    page.goto(gw.http + "/#/chat")
    page.wait_for_selector("#app[data-ready]")
    page.click("#session-list .session[data-key='agent:main:main']")
    page.wait_for_selector(".tool-card")
    page.locator(".tool-card").first.evaluate("el => el.open = true")
    page.wait_for_timeout(200)
    saved = [out / "chat.png"]
    page.screenshot(path=str(saved[-1]))
    page.click("#session-list .session >> text=Refactor parser")
    page.wait_for_selector(".msg.assistant")
    page.locator("#session-list .session", has_text="Trip to Lisbon").hover()
    page.wait_for_timeout(150)
    saved.append(out / "sessions.png")
    page.screenshot(path=str(saved[-1]))
    page.click("a[data-tab=approvals]")
    page.wait_for_selector(".approval-card")
    saved.append(out / "approvals.png")
    page.screenshot(path=str(saved[-1]))
    page.click("a[data-tab=status]")
    page.wait_for_selector("[data-card=plugins]")
    page.wait_for_timeout(200)
    saved.append(out / "status.png")
    page.screenshot(path=str(saved[-1]))
    context.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--screenshots", type=Path, default=None, help="save PNGs of the main views here")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    provider = ScriptedProvider(then="echo")
    results: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="homarus-ui-bench-") as tmp, served(Path(tmp), CONFIG, TOKEN) as gw:
        gw.gateway.models.overrides["demo"] = provider
        loop = asyncio.new_event_loop()
        loop.run_until_complete(_demo_content(gw, provider))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for _ in range(args.runs):
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                context.add_init_script(f"localStorage.setItem('homarus.token', {json.dumps(TOKEN)})")
                page = context.new_page()
                results["cold"].append(_measure(page, gw.http + "/", reload=False))
                results["warm"].append(_measure(page, gw.http + "/", reload=True))
                context.close()
            shots = _screenshots(browser, gw, args.screenshots) if args.screenshots else []
            browser.close()
        loop.run_until_complete(gw.demo_client.ws.close())  # type: ignore[attr-defined]
        loop.close()

    rows = []
    for kind in ("cold", "warm"):
        samples = results[kind]
        row = [kind, str(len(samples))]
        for key in ("fcp", "dcl", "load", "ready"):
            values = [s[key] for s in samples]
            row.append(f"{percentile(values, 50):.0f} / {percentile(values, 95):.0f}")
        row.append(f"{percentile([s['bytes'] for s in samples], 50):,.0f}")
        rows.append(row)
    header = ["load", "n", "first contentful paint ms", "DOMContentLoaded ms", "load ms", "ready ms", "HTML bytes"]
    print("\n".join(markdown_table(header, rows)))
    print("(p50 / p95 from navigation start; ready = connected + sessions, approvals, transcript rendered)")
    facts = machine_facts()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {facts['cpus']} CPUs ({facts['cpu_model']}),"
        f" {facts['ram_gib']} GiB RAM, Python {facts['python']}; Chromium headless, 1280x800"
    )
    for shot in shots:
        print(f"screenshot: {shot}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "machine": facts}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
