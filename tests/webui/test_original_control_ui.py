"""The original's own Control UI (from the `openclaw` 2026.9.6 package that
``../shared/peers/openclaw/install.sh`` installs) in headless Chromium against a Homarus started by
the test: it connects, shows Homarus's sessions, agent, configured model, cron jobs and a pending
exec approval (approved with a click, the run goes on), loads every main view without a method error,
and a message typed into its chat box gets the model's answer on screen. Skipped, with the reason,
without the peer install or Chromium."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.compat.openclaw_cli import PEER_ROOT
from tests.conftest import TEST_TOKEN
from tests.waiting import wait_for_sync
from tests.webui.harness import served

if TYPE_CHECKING:
    from playwright.sync_api import Browser, WebSocket

UI_DIR = PEER_ROOT / "openclaw" / "node_modules" / "openclaw" / "dist" / "control-ui"
MISSING = None if (UI_DIR / "index.html").is_file() else f"the original's Control UI is not installed at {UI_DIR}"


@pytest.fixture
def ui_origin() -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(UI_DIR))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Calls:
    """Every request the UI sends over its WebSocket and how it was answered, with the view that
    was open when it was sent."""

    def __init__(self, page: Any) -> None:
        self.by_id: dict[str, dict[str, Any]] = {}
        self.view = "start"
        self.thrown: list[str] = []  # errors the page threw, with the view open then
        page.on("websocket", self._watch)
        page.on("pageerror", lambda exc: self.thrown.append(f"{self.view}: {exc}"))

    def _watch(self, ws: WebSocket) -> None:
        ws.on("framesent", self._sent)
        ws.on("framereceived", self._received)

    def _sent(self, payload: str | bytes) -> None:
        frame = json.loads(payload)
        if frame.get("type") == "req":
            self.by_id[frame["id"]] = {"method": frame["method"], "params": frame.get("params"), "view": self.view}

    def _received(self, payload: str | bytes) -> None:
        frame = json.loads(payload)
        if frame.get("type") == "res" and frame.get("id") in self.by_id:
            self.by_id[frame["id"]].update(ok=frame.get("ok"), error=frame.get("error"))

    def __len__(self) -> int:
        return len(self.by_id)

    def pending(self) -> bool:
        return any("ok" not in c for c in self.by_id.values())

    def of(self, method: str) -> list[dict[str, Any]]:
        return [c for c in self.by_id.values() if c["method"] == method]

    def failed(self) -> list[str]:
        return [
            f"{c['view']}: {c['method']}: {(c.get('error') or {}).get('message')}"
            for c in self.by_id.values()
            if c.get("ok") is False
        ]


@contextmanager
def _control_ui(browser: Browser, ui_origin: str, port: int, *, wide: bool = False) -> Iterator[tuple[Any, _Calls]]:
    """The original's UI signed in to the Homarus on ``port`` with the token, its chat box shown;
    the page and the record of its calls."""
    context = browser.new_context(viewport={"width": 1400, "height": 900} if wide else {"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        calls = _Calls(page)
        page.goto(f"{ui_origin}/#gatewayUrl=ws://127.0.0.1:{port}&token={TEST_TOKEN}")
        page.get_by_role("button", name="Switch to").first.click()
        page.get_by_placeholder("Message", exact=False).first.wait_for()
        yield page, calls
    finally:
        context.close()


def _scripted(ui_origin: str) -> dict[str, Any]:
    """A Homarus that lets the UI at ``ui_origin`` in, with a scripted model and no heartbeat."""
    return {
        "gateway": {"controlUi": {"allowedOrigins": [ui_origin]}},
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "name": "Scripted"}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
    }


def _seed(port: int) -> None:
    """A cron job and two sessions besides the main one, made over the protocol as a user would."""
    from tests.wsclient import open_client

    async def seed() -> None:
        client = await open_client(f"ws://127.0.0.1:{port}")
        assert (await client.handshake(TEST_TOKEN, ["operator.admin"]))["ok"]
        requests: list[tuple[str, dict[str, Any]]] = [
            (
                "cron.add",
                {
                    "name": "Morning digest",
                    "schedule": {"kind": "cron", "expr": "0 7 * * *"},
                    "sessionTarget": "isolated",
                    "payload": {"kind": "agentTurn", "message": "digest"},
                },
            ),
            ("sessions.create", {"key": "agent:main:notes", "label": "Project notes"}),
            ("agent", {"sessionKey": "agent:main:ideas", "message": "ideas", "idempotencyKey": "seed-ideas"}),
        ]
        for method, params in requests:
            assert (await client.request(method, params))["ok"], method
        await client.ws.close()

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API owns this thread's event loop
        pool.submit(asyncio.run, seed()).result()


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_the_originals_control_ui_chats_with_homarus(browser: Browser, tmp_path: Path, ui_origin: str) -> None:
    config = _scripted(ui_origin) | {
        "tools": {"exec": {"security": "allowlist", "allowlist": ["ls"], "ask": "on-miss"}}
    }
    with served(tmp_path, config) as gw:
        from homarus.providers.scripted import Reply, ScriptedProvider

        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [
                Reply("seeded"),
                Reply("", tool_calls=[("exec", {"command": "touch approved-in-the-ui"})]),
                Reply("the file is there"),
            ],
            then="echo",
        )
        _seed(gw.port)
        with _control_ui(browser, ui_origin, gw.port) as (page, calls):
            box = page.get_by_placeholder("Message", exact=False).first
            page.get_by_text("Project notes").first.wait_for()  # the sessions sidebar
            page.get_by_text("Scripted").first.wait_for()  # the model picker shows the configured model
            # a command outside the allowlist: the UI shows the approval, the click lets the run go on
            box.fill("please make the file")
            box.press("Enter")
            page.get_by_text("Exec approval needed").wait_for()
            page.get_by_text("touch approved-in-the-ui").last.wait_for()
            page.get_by_role("button", name="Allow once").click()
            page.get_by_role("paragraph").filter(has_text="the file is there").wait_for()
            assert (gw.paths.state_dir / "workspace" / "approved-in-the-ui").exists()
            box.fill("lobster check")  # then a plain message and its streamed echo
            box.press("Enter")
            page.get_by_text("lobster check").nth(1).wait_for()  # the echo, below the user's own bubble
            # the streamed reply and the stored one are merged by their runId: each reply shows once
            page.wait_for_timeout(2000)
            assert page.get_by_role("paragraph").filter(has_text="the file is there").count() == 1
            # the message and its echo, no third (a screen-reader announcement aside)
            assert page.get_by_role("paragraph").filter(has_text="lobster check").count() == 2
            for view in ("Agents", "Dashboards", "Systems", "Automations", "Plugins"):  # each main view
                page.get_by_text(view, exact=True).first.click()
                page.wait_for_timeout(1500)
                if view == "Automations":
                    page.get_by_text("Morning digest").first.wait_for()  # Homarus's cron job in its table
    assert len(calls) > 20 and calls.failed() == []


#: every view of the original's Control UI 2026.9.6 (its router's table, ``control-ui-core``)
VIEWS = [
    "/chat/main",
    "/terminal",
    "/dashboard",
    "/dashboards",
    "/custodian",
    "/new",
    "/activity",
    "/meetings",
    "/apps",
    "/portals",
    "/agents",
    "/settings/agents",
    "/settings/channels",
    "/settings/connection",
    "/settings/general",
    "/settings/profile",
    "/settings/communications",
    "/settings/appearance",
    "/settings/lobsterdex",
    "/settings/device",
    "/settings/device/permissions",
    "/settings/notifications",
    "/settings/security",
    "/settings/secrets",
    "/settings/advanced",
    "/settings/approvals",
    "/settings/automation",
    "/settings/mcp",
    "/settings/memory",
    "/settings/search",
    "/settings/talk",
    "/settings/infrastructure",
    "/settings/labs",
    "/settings/updates",
    "/settings/about",
    "/settings/ai-agents",
    "/settings/model-setup",
    "/settings/model-providers",
    "/memory-import",
    "/workboard",
    "/worktrees",
    "/sessions",
    "/systems",
    "/usage",
    "/debug",
    "/logs",
    "/skills/workshop",
    "/skills",
    "/settings/skills",
    "/plugins",
    "/settings/plugins",
    "/automations",
    "/tasks",
    "/settings/devices",
    "/settings/cloud-workers",
]


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_every_view_of_the_originals_control_ui_loads_without_a_method_error(
    browser: Browser, tmp_path: Path, ui_origin: str
) -> None:
    """Each of the UI's 55 views, reached through its own router as a click would, against a Homarus
    with a session, a cron job and usage on record: no method answers an error, no view throws."""
    config = _scripted(ui_origin)
    with served(tmp_path, config) as gw:
        _seed(gw.port)
        with _control_ui(browser, ui_origin, gw.port) as (page, calls):
            for view in VIEWS:
                calls.view = view
                _go(page, view)
                page.wait_for_timeout(400)
                for _ in range(40):  # settled: every request of the view answered, nothing new for 300 ms
                    seen = len(calls)
                    page.wait_for_timeout(300)
                    if not calls.pending() and len(calls) == seen:
                        break
    assert len(calls) > 100, len(calls)  # the views did ask (the tour is not vacuous)
    assert calls.failed() == [] and calls.thrown == [], "\n".join(calls.failed() + calls.thrown)


def _go(page: Any, route: str) -> None:
    """Navigate inside the UI as a click on one of its links does (its own router, no reload)."""
    page.evaluate(
        "h => { history.pushState({}, '', h); dispatchEvent(new PopStateEvent('popstate', {state: {}})); }", route
    )


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_an_automation_is_created_paused_edited_and_removed_in_the_originals_ui(
    browser: Browser, tmp_path: Path, ui_origin: str
) -> None:
    """The Automations view's editing flow against Homarus: each step lands in Homarus's job store,
    the edits go with the job's configRevision, and no call answers an error."""
    config = {
        "gateway": {"controlUi": {"allowedOrigins": [ui_origin]}},
        "agents": {"defaults": {"heartbeat": {"every": "0m"}}},
    }
    with served(tmp_path, config) as gw:

        def jobs() -> list[dict[str, Any]]:
            path = gw.paths.state_dir / "cron" / "jobs.json"
            return json.loads(path.read_text())["jobs"] if path.exists() else []

        with _control_ui(browser, ui_origin, gw.port, wide=True) as (page, calls):
            _go(page, "/automations")
            page.get_by_role("button", name="New automation").click()
            page.get_by_placeholder("Describe what OpenClaw should do...").fill("Summarise the news")
            page.get_by_placeholder("Morning brief").fill("News digest")
            page.get_by_role("button", name="Create automation").click()
            page.get_by_text("News digest").first.wait_for()

            def stored(check: Any) -> None:  # the UI may show a change before Homarus has written it
                wait_for_sync(lambda: (found := jobs()) and check(found), what="the job store")

            stored(lambda js: js[0]["payload"] == {"kind": "agentTurn", "message": "Summarise the news"})
            page.get_by_role("switch").first.click(force=True)  # pause it
            page.get_by_text("Paused").first.wait_for()
            stored(lambda js: js[0]["enabled"] is False)
            page.get_by_text("News digest").first.click()  # open it, rename, save
            page.get_by_placeholder("Morning brief").fill("Evening digest")
            page.get_by_role("button", name="Save changes").click()
            page.get_by_role("button", name="All automations").click()
            page.get_by_text("Evening digest").first.wait_for()
            stored(lambda js: js[0]["name"] == "Evening digest")
            page.get_by_role("button", name="More actions for Evening digest").first.click()
            page.get_by_text("Remove", exact=True).last.click()  # the menu's item, then its confirmation
            page.get_by_role("button", name="Remove", exact=True).last.click()
            wait_for_sync(lambda: jobs() == [], what="the job removed")
    updates = calls.of("cron.update")
    assert len(updates) == 2 and all(c["params"]["expectedConfigRevision"].startswith("sha256:") for c in updates)
    assert calls.of("cron.remove")
    assert calls.failed() == []


def _pairing_request(port: int) -> str:
    """A phone asking to pair from beyond a proxy (so it waits for approval); its device id."""
    import types

    from tests.gateway.ws.test_device_pairing import REMOTE, Phone

    phone = Phone()

    async def ask() -> None:
        _, res = await phone.connect(types.SimpleNamespace(url=f"ws://127.0.0.1:{port}"), token=TEST_TOKEN,  # type: ignore[arg-type]
                                     headers=REMOTE)  # fmt: skip
        assert res["error"]["code"] == "NOT_PAIRED"

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, ask()).result()
    return phone.id


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_config_sessions_skills_and_devices_are_edited_in_the_originals_ui(
    browser: Browser, tmp_path: Path, ui_origin: str
) -> None:
    """The UI's other editing flows against Homarus, each landing where Homarus keeps it: the theme
    synced to ``ui.prefs`` (a patch without base hash, as the original allows there), the raw
    config saved with its base hash, a session relabelled and its verbosity set, a skill turned
    off, a waiting device approved; the Logs view shows the audit trail's lines."""
    config = _scripted(ui_origin)
    with served(tmp_path, config) as gw:
        _seed(gw.port)
        phone = _pairing_request(gw.port)

        def on_disk() -> dict[str, Any]:
            return dict(json.loads(gw.paths.config_path.read_text()))

        with _control_ui(browser, ui_origin, gw.port, wide=True) as (page, calls):
            _go(page, "/settings/advanced")
            page.get_by_role("button", name="Raw", exact=True).click()
            raw = page.locator("textarea:not([aria-label])")
            wait_for_sync(lambda: '"every": "0m"' in raw.input_value(), what="the raw editor filled")
            raw.fill(raw.input_value().replace('"every": "0m"', '"every": "2h"'))
            page.get_by_role("button", name="Save", exact=True).click()
            wait_for_sync(lambda: on_disk()["agents"]["defaults"]["heartbeat"] == {"every": "2h"}, what="config saved")

            _go(page, "/settings/appearance")
            page.get_by_text("Dark", exact=True).first.click()
            wait_for_sync(lambda: on_disk().get("ui") == {"prefs": {"themeMode": "dark"}}, what="the theme synced")

            _go(page, "/sessions")
            page.get_by_role("button", name="Show session details for agent:main:notes").click()
            label = page.get_by_placeholder("(optional)")
            label.fill("Roadmap")
            label.press("Enter")
            page.locator("select").filter(has=page.locator("option[value=full]")).select_option("full")

            def session() -> Any:
                from homarus.sessions.keys import parse_session_key

                return gw.gateway.sessions.get(parse_session_key("agent:main:notes")).entry  # type: ignore[union-attr]

            wait_for_sync(lambda: session().verbose_level == "full", what="the session patched")
            assert session().label == "Roadmap"

            _go(page, "/settings/skills")
            page.get_by_text("summarize-url").first.click()
            page.get_by_role("switch").last.evaluate("e => e.click()")  # its input is styled out of sight

            def skill() -> Any:
                return on_disk().get("skills", {}).get("entries", {}).get("summarize-url")

            wait_for_sync(lambda: skill() == {"enabled": False}, what="the skill off")
            page.keyboard.press("Escape")

            _go(page, "/settings/devices")
            page.get_by_text("1 awaiting approval").wait_for()
            page.get_by_role("button", name="Approve").first.click()
            wait_for_sync(lambda: gw.gateway.devices.get(phone) is not None, what="the device paired")

            _go(page, "/logs")
            page.get_by_text("run.start  seed-ideas").first.wait_for()
    assert calls.of("config.patch")[0]["params"].get("baseHash") is None
    assert all(c["params"]["baseHash"] for c in calls.of("config.set"))
    assert calls.failed() == []
