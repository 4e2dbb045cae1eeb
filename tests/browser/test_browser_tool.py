"""The browser tool with real headless Chromium against pages served on loopback by the test
(allowed for 127.0.0.1 only): snapshot refs, click/type flows, a stale ref, a redirect and a
subresource to a blocked address, screenshot, console, evaluate off, idle shutdown."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from homarus.browser.manager import BrowserHub
from homarus.browser.tool import make_browser_tool
from homarus.config.browser import BrowserConfig
from homarus.errors import InvalidRequest
from homarus.tools.base import Tool, ToolContext, ToolResult
from homarus.tools.sandbox_sessions import SandboxView

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=f"{CHROMIUM} is not installed")

PAGES = {
    "/": "<title>Home</title><h1>Lobster news</h1><p>Fresh today.</p><a href='/form'>Sign up</a>",
    "/form": (
        "<title>Form</title><label for=n>Name</label><input id=n>"
        "<button onclick=\"document.getElementById('out').textContent='Hello, '+document.getElementById('n').value\">"
        "Greet</button><p id=out></p><script>console.log('form ready')</script>"
    ),
    "/secret": "<p>internal secret</p>",
}


class _Site(BaseHTTPRequestHandler):
    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(self.path)
        port = self.server.server_port  # type: ignore[attr-defined]
        if self.path == "/redirect-private":
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{port}/secret")
            self.end_headers()
            return
        if self.path == "/login":
            body = b"<title>Login</title><p>signed in</p>"
            self.send_response(200)
            self.send_header("Set-Cookie", "session=owner-login; Path=/; Max-Age=3600")
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path == "/whoami":
            body = f"<title>Who</title><p>cookie: {self.headers.get('Cookie') or 'none'}</p>".encode()
        elif self.path == "/img-private":
            body = f"<title>Img</title><p>picture</p><img src='http://localhost:{port}/secret'>".encode()
        elif self.path in PAGES:
            body = PAGES[self.path].encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def site() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Site", (_Site,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _text(result: ToolResult) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def _ref(snapshot: str, role: str, name: str) -> str:
    for line in snapshot.splitlines():
        if f'{role} "{name}"' in line:
            return line.split("[ref=")[1].split("]")[0]
    raise AssertionError(f"no {role} {name!r} in:\n{snapshot}")


async def test_the_agent_reads_clicks_types_and_cannot_reach_private_addresses(
    tmp_path: Path, site: tuple[str, list[str]]
) -> None:
    base, seen = site
    hub = BrowserHub(BrowserConfig.model_validate({"ssrf": {"allow": ["127.0.0.1"]}}), tmp_path / "state")
    tool: Tool = make_browser_tool(lambda: hub)
    ctx = ToolContext("agent:main:main", "main", "r1", "c1", tmp_path)

    async def act(**args: Any) -> ToolResult:
        return await tool.execute(ctx, args)

    try:
        opened = await act(action="open", url=base + "/")
        assert "title 'Home'" in _text(opened), _text(opened)
        snap = _text(await act(action="snapshot"))
        assert "EXTERNAL_UNTRUSTED_CONTENT" in snap and 'heading "Lobster news" [level=1]' in snap
        link = _ref(snap, "link", "Sign up")
        await act(action="click", ref=link)
        form = _text(await act(action="snapshot"))
        assert "Page: Form" in form
        name_box, button = _ref(form, "textbox", "Name"), _ref(form, "button", "Greet")
        await act(action="type", ref=name_box, text="Ada")
        await act(action="click", ref=button)
        assert "Hello, Ada" in _text(await act(action="snapshot"))
        assert _ref(_text(await act(action="snapshot")), "button", "Greet") == button  # refs are stable
        with pytest.raises(InvalidRequest, match="not on the page any more"):
            await act(action="click", ref=link)  # the link was on the previous page
        console = _text(await act(action="console"))
        assert "form ready" in console
        shot = await act(action="screenshot")
        image = shot.content[0]
        assert getattr(image, "mime_type", "") == "image/png" and shot.details["bytes"] < 2_000_000
        assert (await act(action="evaluate", expression="1+1")).is_error is True  # off by default

        for url in (base.replace("127.0.0.1", "localhost") + "/secret", "http://169.254.169.254/latest/meta-data"):
            blocked = await act(action="open", url=url)
            assert blocked.is_error and "blocked" in _text(blocked), _text(blocked)
        redirected = await act(action="open", url=base + "/redirect-private")
        assert redirected.is_error and "blocked" in _text(redirected) and "localhost" in _text(redirected)
        picture = await act(action="open", url=base + "/img-private")
        assert "request(s) blocked" in _text(picture)
        assert "/secret" not in seen  # nothing private was ever fetched
        assert "running" in _text(await act(action="status"))
        assert "stopped" in _text(await act(action="stop"))
    finally:
        await hub.stop()


async def test_idle_browser_is_closed_and_sandboxed_sessions_get_their_own_or_none(
    tmp_path: Path, site: tuple[str, list[str]]
) -> None:
    import asyncio

    base, _ = site
    cfg = BrowserConfig.model_validate({"ssrf": {"allow": ["127.0.0.1"]}, "idleMinutes": 0.01})
    hub = BrowserHub(cfg, tmp_path / "state")
    tool = make_browser_tool(lambda: hub)
    ctx = ToolContext("agent:main:main", "main", "r1", "c1", tmp_path)
    try:
        await tool.execute(ctx, {"action": "open", "url": base + "/"})
        assert hub.status("main")["running"] is True
        for _ in range(100):
            if not hub.status("main")["running"]:
                break
            await asyncio.sleep(0.1)
        assert hub.status("main")["running"] is False
        assert (tmp_path / "state" / "browser" / "main" / "profile").is_dir()  # the profile stays
        view = SandboxView("agent:main:x", tmp_path, None, True, None)
        sandboxed = ToolContext("agent:main:x", "main", "r2", "c2", tmp_path, sandbox=view)
        refused = await tool.execute(sandboxed, {"action": "open", "url": base + "/"})
        assert refused.is_error and "sandbox.browser.enabled" in _text(refused)

        view.browser = True  # sandbox.browser.enabled: a browser of their own, never the agent's cookies
        await tool.execute(ctx, {"action": "open", "url": base + "/login"})
        await tool.execute(sandboxed, {"action": "open", "url": base + "/whoami"})
        assert "cookie: none" in _text(await tool.execute(sandboxed, {"action": "snapshot"}))
        await tool.execute(ctx, {"action": "open", "url": base + "/whoami"})
        assert "cookie: session=owner-login" in _text(await tool.execute(ctx, {"action": "snapshot"}))
        assert hub.status("main", sandboxed=True)["profile"].endswith("sandbox-profile")
    finally:
        await hub.stop()


async def test_the_browser_connects_to_the_address_it_checked_and_a_rebinding_name_is_refused(
    tmp_path: Path, site: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding (issue: the browser checked a name's address, then Chromium resolved it
    again). ``pinned.test`` and ``rebind.test`` exist only in Homarus's resolver: a page of the
    first loads, so the connection went to the address the check resolved, not to a second lookup
    (the system cannot resolve it at all); the second answers a public address to the check and
    loopback afterwards, and nothing is fetched from loopback."""
    base, seen = site
    port = base.rsplit(":", 1)[1]
    rebind_answers = iter([["93.184.216.34"]])
    real = __import__("homarus.security.ssrf", fromlist=["system_resolver"]).system_resolver

    async def resolver(host: str, port_: int) -> list[str]:
        if host == "pinned.test":
            return ["127.0.0.1"]
        if host == "rebind.test":
            return next(rebind_answers, ["127.0.0.1"])  # first the public one, then loopback for good
        return list(await real(host, port_))

    monkeypatch.setattr("homarus.security.ssrf.system_resolver", resolver)
    hub = BrowserHub(BrowserConfig.model_validate({"ssrf": {"allow": ["pinned.test"]}}), tmp_path / "state")
    browser = await hub.for_agent("main")
    tool: Tool = make_browser_tool(lambda: hub)
    ctx = ToolContext("agent:main:main", "main", "r1", "c1", tmp_path)
    try:
        pinned = await tool.execute(ctx, {"action": "open", "url": f"http://pinned.test:{port}/"})
        assert "title 'Home'" in _text(pinned), _text(pinned)
        rebound = await tool.execute(ctx, {"action": "open", "url": f"http://rebind.test:{port}/secret"})
        assert next(rebind_answers, None) is None  # the check had its public answer
        assert rebound.is_error and "/secret" not in seen, _text(rebound)
        assert any("rebind.test" in url and "127.0.0.1" in why for url, why in browser.egress.blocked)
    finally:
        await hub.stop()


async def test_a_stranger_granted_the_browser_never_drives_the_owner_profile(
    tmp_path: Path, site: tuple[str, list[str]]
) -> None:
    """A run sent by someone other than an owner (``strangerTools: ["browser"]``) gets the
    throw-away profile: the owner's logged-in cookies are not there."""
    base, _seen = site
    hub = BrowserHub(BrowserConfig.model_validate({"ssrf": {"allow": ["127.0.0.1"]}}), tmp_path / "state")
    tool: Tool = make_browser_tool(lambda: hub)
    owner = ToolContext("agent:main:main", "main", "r1", "c1", tmp_path)
    stranger = ToolContext("agent:main:telegram:direct:222", "main", "r2", "c2", tmp_path, trusted=False)
    try:
        await tool.execute(owner, {"action": "open", "url": base + "/login"})
        await tool.execute(owner, {"action": "open", "url": base + "/whoami"})
        assert "owner-login" in _text(await tool.execute(owner, {"action": "snapshot"}))
        await tool.execute(stranger, {"action": "open", "url": base + "/whoami"})
        theirs = _text(await tool.execute(stranger, {"action": "snapshot"}))
        assert "cookie: none" in theirs and "owner-login" not in theirs
        assert hub.status("main", sandboxed=True)["running"] and hub.status("main")["running"]
    finally:
        await hub.stop()
