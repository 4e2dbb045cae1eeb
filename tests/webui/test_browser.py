"""The Control UI in real headless Chromium against a real gateway with the scripted model.

Each test gets a fresh browser context (empty localStorage) and its own gateway; the browser
process is shared by the module. The gateway's asyncio objects are touched only through its loop
(``call_soon``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from websockets.asyncio.client import connect

from homarus.providers.scripted import Gate, Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN
from tests.webui.harness import Served, served, start_gateway
from tests.wsclient import Client

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Dialog, Page

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips these tests with the reason
    expect = None  # type: ignore[assignment]

TIMEOUT_MS = 15_000


def _config(**exec_cfg: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}}},
        "tools": {"exec": {"security": "allowlist", "allowlist": ["echo"], "ask": "on-miss", **exec_cfg}},
    }


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Served]:
    with served(tmp_path, _config()) as running:
        yield running


def _script(gw: Served, *steps: Any, then: str = "error") -> None:
    gw.gateway.models.overrides["test"] = ScriptedProvider(list(steps), then=then)  # type: ignore[arg-type]


class Watch:
    """Dialogs and page errors seen by a page (an XSS that fires shows up here)."""

    def __init__(self, page: Page) -> None:
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()


_contexts: list[BrowserContext] = []


@pytest.fixture(autouse=True)
def _close_contexts() -> Iterator[None]:
    yield
    while _contexts:
        _contexts.pop().close()


def _open(browser: Browser, gw: Served, token: str | None = TEST_TOKEN) -> tuple[Page, Watch]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    _contexts.append(context)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    watch = Watch(page)
    page.goto(gw.http + "/")
    page.wait_for_selector("#login-form")
    if token is not None:
        page.fill("#token-input", token)
        page.click("#login-submit")
    return page, watch


def _connected(page: Page) -> None:
    page.wait_for_selector("#conn[data-state=connected]")
    page.wait_for_selector("#app[data-ready]")  # the first load finished


def _send(page: Page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")


def _release(gw: Served, gate: Gate) -> None:
    gw.call_soon(gate.event.set)


def _wait_reached(gate: Gate, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not gate.reached.is_set():
        assert time.monotonic() < deadline, "the model was never asked"
        time.sleep(0.02)


def test_chat_streams_the_reply_and_shows_tool_cards(browser: Browser, gw: Served) -> None:
    long_arg = "x" * 3000
    gate = Gate(asyncio.Event(), Reply("It is **late**, and `echo` agrees."))
    _script(
        gw,
        Reply("Let me check with the shell.", tool_calls=[("exec", {"command": "echo hello"})]),
        Reply("", tool_calls=[("exec", {"command": f"echo {long_arg}"})]),
        gate,
    )
    page, watch = _open(browser, gw)
    _connected(page)
    _send(page, "what time is it?")
    page.wait_for_selector(".msg.user >> text=what time is it?")
    # mid-run: the first turn's text is on screen and the tool cards are done, the run is not
    _wait_reached(gate)
    page.wait_for_selector(".run .msg.assistant >> text=Let me check with the shell.")
    cards = page.locator(".tool-card")
    page.wait_for_selector(".tool-card.ok >> nth=1")
    assert cards.count() == 2
    first = cards.nth(0)
    assert first.locator(".tool-name").inner_text() == "exec"
    assert first.locator(".tool-status").inner_text() == "done"
    assert "echo hello" in first.locator(".tool-args").inner_text()
    assert "hello" in first.locator(".tool-output").inner_text()
    assert first.locator(".tool-time").inner_text().endswith("ms")
    assert page.is_visible("#composer-stop")
    assert page.is_visible(".run .typing")
    # a long result is cut, with a way to see the rest
    second = cards.nth(1)
    output = second.locator(".tool-output")
    assert len(output.inner_text()) < 1300
    second.locator(".tool-result-box .show-more").click()
    assert long_arg in output.inner_text()
    _release(gw, gate)
    strong = page.wait_for_selector(".run .msg.assistant strong >> text=late")
    assert strong is not None
    assert page.inner_text(".run .msg.assistant code.inline >> nth=-1") == "echo"
    page.wait_for_selector("#composer-stop", state="hidden")
    assert page.locator(".run .typing").count() == 0
    # the order on screen is the order things happened
    order = page.eval_on_selector_all(".run > *", "els => els.map(e => e.className.split(' ')[0])")
    assert order == ["msg", "tool-card", "tool-card", "msg"]
    # a reload shows the same conversation from the transcript
    page.reload()
    page.wait_for_selector("#conn[data-state=connected]")
    page.wait_for_selector(".msg.assistant strong >> text=late")
    assert page.locator(".tool-card.ok").count() == 2
    assert not watch.errors


def test_stop_aborts_the_run(browser: Browser, gw: Served) -> None:
    gate = Gate(asyncio.Event(), Reply("too late"))
    _script(gw, gate)
    page, _ = _open(browser, gw)
    _connected(page)
    _send(page, "take your time")
    _wait_reached(gate)
    page.click("#composer-stop")
    page.wait_for_selector(".run-note >> text=Stopped.")
    page.wait_for_selector("#composer-stop", state="hidden")
    assert page.locator("#messages >> text=too late").count() == 0


def test_sessions_create_rename_switch_search_delete_and_live_updates(browser: Browser, gw: Served) -> None:
    _script(gw, then="echo")
    page, _ = _open(browser, gw)
    _connected(page)
    _send(page, "hello main")
    page.wait_for_selector(".msg.assistant >> text=hello main")

    other = page.context.new_page()  # a second tab: its changes reach the first one live
    other.set_default_timeout(TIMEOUT_MS)
    other.goto(gw.http + "/")
    _connected(other)
    other.click("#session-new")
    other.wait_for_selector("#session-list .session >> nth=1")
    page.wait_for_selector("#session-list .session >> nth=1")  # sessions.changed → refreshed list
    other.close()

    page.click("#session-new")
    page.wait_for_selector("#session-list .session >> nth=2")
    active = page.locator("#session-list .session.active")
    new_key = active.get_attribute("data-key")
    assert new_key is not None and new_key != "agent:main:main"
    assert page.inner_text("#chat-key") == new_key
    _send(page, "hello project")
    page.wait_for_selector(".msg.assistant >> text=hello project")

    active.hover()
    active.locator("[data-action=rename]").click()
    page.fill("#session-list input.rename", "Project <b>X</b>")
    page.press("#session-list input.rename", "Enter")
    page.wait_for_selector("#session-list .session.active .session-title >> text=Project <b>X</b>")
    assert page.locator("#session-list b").count() == 0  # the label is text, not markup

    page.click("#session-list .session[data-key='agent:main:main']")
    page.wait_for_selector(".msg.user >> text=hello main")
    assert page.locator("#messages >> text=hello project").count() == 0
    page.click(f"#session-list .session[data-key='{new_key}']")
    page.wait_for_selector(".msg.user >> text=hello project")

    page.fill("#session-search", "project")
    expect(page.locator("#session-list .session")).to_have_count(1)

    page.fill("#session-search", "")
    page.wait_for_selector("#session-list .session >> nth=2")
    row = page.locator(f"#session-list .session[data-key='{new_key}']")
    row.hover()
    delete = row.locator("[data-action=delete]")
    delete.click()
    assert delete.inner_text() == "Delete?"  # armed: a second click confirms
    delete.click()
    page.wait_for_selector(f"#session-list .session[data-key='{new_key}']", state="detached")
    page.wait_for_selector("#session-list .session.active[data-key='agent:main:main']")


def test_reset_starts_a_fresh_transcript(browser: Browser, gw: Served) -> None:
    _script(gw, then="echo")
    page, _ = _open(browser, gw)
    _connected(page)
    _send(page, "remember this")
    page.wait_for_selector(".msg.assistant >> text=remember this")
    row = page.locator("#session-list .session.active")
    row.hover()
    row.locator("[data-action=reset]").click()
    row.locator("[data-action=reset]").click()
    page.wait_for_selector(".chat-empty")
    assert page.locator(".msg").count() == 0


def test_exec_approval_is_resolved_from_the_panel(browser: Browser, gw: Served) -> None:
    _script(gw, Reply("", tool_calls=[("exec", {"command": "touch ran"})]), Reply("done"))
    page, _ = _open(browser, gw)
    _connected(page)
    _send(page, "make a file")
    page.wait_for_selector("#approvals-badge >> text=1")
    page.wait_for_selector("#chat-approvals >> text=1 approval waiting")
    page.click("a[data-tab=approvals]")
    card = page.wait_for_selector(".approval-card[data-kind=exec]")
    assert card is not None
    assert "touch ran" in page.inner_text(".approval-command")
    page.click(".approval-card [data-decision=allow-once]")
    page.wait_for_selector(".approval-card", state="detached")
    page.wait_for_selector("#approvals-badge", state="hidden")
    page.click("a[data-tab=chat]")
    page.wait_for_selector(".tool-card.ok")
    page.wait_for_selector(".msg.assistant >> text=done")
    assert list(gw.paths.state_dir.rglob("ran")), "the approved command did not run"


def test_approvals_pending_before_connect_are_listed_and_deny_works(browser: Browser, gw: Served) -> None:
    _script(gw, Reply("", tool_calls=[("exec", {"command": "touch nope"})]), Reply("denied then"))
    first, _ = _open(browser, gw)
    _connected(first)
    _send(first, "try it")
    first.wait_for_selector("#approvals-badge >> text=1")
    page, _ = _open(browser, gw)  # a second operator opens the UI later
    _connected(page)
    page.click("a[data-tab=approvals]")
    page.click(".approval-card [data-decision=deny]")
    page.wait_for_selector(".approval-card", state="detached")
    first.wait_for_selector("#approvals-badge", state="hidden")  # the resolved event reached the other tab
    first.wait_for_selector(".tool-card.error")
    assert not list(gw.paths.state_dir.rglob("nope"))


def _in_thread(coro: Coroutine[Any, Any, Any]) -> Future[Any]:
    """Run ``coro`` on its own loop in a thread (Playwright's sync API owns this thread's loop)."""
    future: Future[Any] = Future()

    def target() -> None:
        try:
            future.set_result(asyncio.run(coro))
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=target, daemon=True).start()
    return future


async def _plugin_asks(url: str) -> dict[str, Any]:
    # not open_client: its cleanup list is drained on other tests' loops
    client = Client(await connect(url, open_timeout=5))
    try:
        assert (await client.handshake(TEST_TOKEN, ["operator.approvals"]))["ok"]
        params = {
            "pluginId": "deploy-guard",
            "title": "Push <b>to</b> production?",
            "description": "The agent wants to run the deploy tool against prod.",
            "severity": "critical",
            "toolName": "deploy",
            "timeoutMs": 30_000,
        }
        res = await client.request("plugin.approval.request", params, timeout=30)
        payload: dict[str, Any] = res["payload"]
        return payload
    finally:
        await client.ws.close()


def test_plugin_approval_is_resolved_from_the_panel(browser: Browser, gw: Served) -> None:
    page, _ = _open(browser, gw)
    _connected(page)
    page.click("a[data-tab=approvals]")
    page.wait_for_selector(".approval-list >> text=Nothing is waiting.")
    decision = _in_thread(_plugin_asks(f"ws://127.0.0.1:{gw.port}"))
    card = page.wait_for_selector(".approval-card[data-kind=plugin]")
    assert card is not None
    assert "critical" in (card.get_attribute("class") or "")
    assert page.inner_text(".approval-title") == "Push <b>to</b> production?"
    assert "deploy-guard" in page.inner_text(".approval-card .facts")
    page.click(".approval-card [data-decision=allow-always]")
    assert decision.result(timeout=10)["decision"] == "allow-always"
    page.wait_for_selector(".approval-list >> text=Nothing is waiting.")


def test_reconnects_after_a_gateway_restart_mid_run(browser: Browser, tmp_path: Path) -> None:
    with served(tmp_path, _config()) as first:
        gate = Gate(asyncio.Event(), Reply("never sent"))
        _script(first, gate)
        page, _ = _open(browser, first)
        _connected(page)
        _send(page, "a long job")
        _wait_reached(gate)
        port, paths = first.port, first.paths
        first.stop()  # the run is cut short mid-stream
        page.wait_for_selector("#banner.disconnected")
        assert "Reconnecting" in page.inner_text("#banner") or "restarting" in page.inner_text("#banner")
        assert page.get_attribute("#conn", "data-state") in ("disconnected", "connecting")
        # the gateway ends the run as it stops (or the UI gives up on it): no spinner left behind
        page.wait_for_selector(".run .run-note")
        assert page.locator(".run .typing").count() == 0
        assert not page.is_visible("#composer-stop")
        second = start_gateway(paths, port)
        try:
            _script(second, then="echo")
            page.wait_for_selector("#conn[data-state=connected]", timeout=30_000)
            page.wait_for_selector("#banner", state="hidden")
            page.wait_for_selector("#app[data-ready]")
            assert page.locator("#messages .msg.user >> text=a long job").count() == 1  # from the transcript
            _send(page, "still there?")
            page.wait_for_selector(".msg.assistant >> text=still there?")
        finally:
            second.stop()


def test_runs_started_elsewhere_show_up_live(browser: Browser, gw: Served) -> None:
    _script(gw, Reply("", tool_calls=[("exec", {"command": "echo from elsewhere"})]), Reply("answered elsewhere"))
    page, _ = _open(browser, gw)
    _connected(page)
    other = page.context.new_page()
    other.set_default_timeout(TIMEOUT_MS)
    other.goto(gw.http + "/")
    _connected(other)
    _send(other, "asked in another tab")
    page.wait_for_selector("#messages .tool-card.ok")
    page.wait_for_selector("#messages .msg.assistant >> text=answered elsewhere")
    # once the run is over the transcript replaces the live fragments, with the question in place
    page.wait_for_selector("#messages .msg.user >> text=asked in another tab")
    other.close()


XSS_TEXT = (
    '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> '
    "[click me](javascript:window.__pwned=3) ![i](javascript:alert(3)) <svg onload=alert(4)> "
    "**bold** [ok](https://example.com/a)"
)
XSS_TOOL = "<img src=x onerror=window.__pwned=5><script>alert(6)</script><iframe src=javascript:alert(7)>"


def test_hostile_markup_in_replies_and_tool_results_stays_inert(browser: Browser, gw: Served) -> None:
    _script(
        gw,
        Reply(XSS_TEXT, tool_calls=[("exec", {"command": f"echo '{XSS_TOOL}'"})]),
        Reply("```html\n<script>alert(8)</script>\n```\n" + XSS_TEXT),
    )
    page, watch = _open(browser, gw)
    _connected(page)
    scripts_before = page.evaluate("document.scripts.length")
    _send(page, "<b>hi</b><img src=x onerror=alert(9)>")
    page.wait_for_selector(".tool-card.ok")
    page.wait_for_selector(".code >> text=<script>alert(8)</script>")
    page.wait_for_selector("#composer-stop", state="hidden")
    page.wait_for_timeout(300)  # give any injected handler the chance to run
    assert XSS_TOOL in page.inner_text(".tool-output")
    assert "<img src=x onerror=" in page.inner_text(".run")
    assert page.locator(".msg.user >> text=<b>hi</b>").count() == 1
    assert page.evaluate("window.__pwned") is None
    assert watch.dialogs == []
    assert page.evaluate("document.scripts.length") == scripts_before
    content = "#messages"
    assert page.locator(f"{content} img, {content} svg, {content} iframe, {content} script").count() == 0
    assert page.locator(f"{content} [onerror], {content} [onload]").count() == 0
    hrefs = page.eval_on_selector_all(f"{content} a", "els => els.map(a => [a.href, a.rel, a.target])")
    assert hrefs, "the https link should render"
    for href, rel, target in hrefs:
        assert href.startswith(("https://", "http://"))
        assert "noopener" in rel and target == "_blank"


def test_wrong_token_shows_the_unauthorized_banner(browser: Browser, gw: Served) -> None:
    page, _ = _open(browser, gw, token="not-the-token")
    page.wait_for_selector("#banner.unauthorized")
    assert "Unauthorized" in page.inner_text("#banner")
    assert page.is_visible("#login-form")
    assert "token" in page.inner_text("#login-error")
    assert page.get_attribute("#conn", "data-state") == "unauthorized"
    page.wait_for_timeout(800)
    assert page.get_attribute("#conn", "data-state") == "unauthorized"  # no retry loop burning auth budget
    page.fill("#token-input", TEST_TOKEN)
    page.click("#login-submit")
    _connected(page)
    assert page.is_hidden("#banner")
    assert TEST_TOKEN not in page.url


EVIL_PAGE = """<!doctype html><html><body><script>
window.result = null;
const ws = new WebSocket("ws://127.0.0.1:%(port)d/");
ws.onmessage = (ev) => {
  const frame = JSON.parse(ev.data);
  if (frame.event === "connect.challenge") {
    ws.send(JSON.stringify({type: "req", id: "c", method: "connect", params: {
      minProtocol: 3, maxProtocol: 3, role: "operator", scopes: ["operator.admin"],
      client: {id: "homarus-control-ui", version: "1", platform: "web", mode: "webchat"},
      auth: {token: "%(token)s"}}}));
  } else if (frame.type === "res") {
    window.result = frame;
  }
};
ws.onclose = (ev) => { window.closeCode = ev.code; };
</script></body></html>"""


@contextmanager
def _other_local_site(body: str) -> Iterator[str]:
    """A second web server on loopback (another origin) that serves ``body`` at ``/``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_cross_origin_page_is_refused(browser: Browser, gw: Served) -> None:
    # Another local web server (say a dev server on another port) serves a page that knows the
    # token. Chromium lets loopback pages reach loopback sockets (a public site would already be
    # stopped by its local-network checks), so this is the case the gateway itself must refuse.
    context = browser.new_context()
    _contexts.append(context)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    with _other_local_site(EVIL_PAGE % {"port": gw.port, "token": TEST_TOKEN}) as evil:
        page.goto(evil)
        page.wait_for_function("() => window.result !== null")
        result = page.evaluate("window.result")
        assert result["ok"] is False
        assert result["error"]["details"]["code"] == "CONTROL_UI_ORIGIN_NOT_ALLOWED"
        page.wait_for_function("() => window.closeCode !== undefined")
        assert page.evaluate("window.closeCode") == 1008


def test_the_page_cannot_be_framed(browser: Browser, gw: Served) -> None:
    page = browser.new_page()
    with _other_local_site(f'<!doctype html><iframe id="f" src="{gw.http}/"></iframe>') as framer:
        page.goto(framer)
        page.wait_for_timeout(500)
        assert page.frame_locator("#f").locator("#login-form").count() == 0
    page.close()


RENDER = """async (src) => {
  const md = await import("/assets/markdown.js");
  const started = performance.now();
  const box = document.createElement("div");
  box.append(md.renderMarkdown(src));
  return {html: box.innerHTML, ms: performance.now() - started};
}"""


@pytest.mark.parametrize(
    ("source", "expected", "absent"),
    [
        (
            "# Title\n\nText with **bold**, *em*, ~~gone~~ and `a <b> c`.",
            [
                '<h3 class="md-h">Title</h3>',
                "<strong>bold</strong>",
                "<em>em</em>",
                "<del>gone</del>",
                '<code class="inline">a &lt;b&gt; c</code>',
            ],
            ["<b>"],
        ),
        ("- a\n- b\n\n3. x\n4. y", ["<ul><li>a</li><li>b</li></ul>", '<ol start="3"><li>x</li><li>y</li></ol>'], []),
        (
            "| a | b |\n|---|:-:|\n| 1 | <i>2</i> |",
            ["<th>a</th>", "<td>1</td>", '<td class="align-center">&lt;i&gt;2&lt;/i&gt;</td>'],
            ["<i>"],
        ),
        ("```js\nlet x = '<b>';", ["<code data-lang=\"js\">let x = '&lt;b&gt;';</code>"], ["<b>"]),  # unclosed fence
        ("> quoted\n> text", ["<blockquote><p>quoted<br>text</p></blockquote>"], []),
        (
            "[x](javascript:alert(1)) [y](https://e.example/) see https://e.example/a.",
            ['href="https://e.example/"', 'href="https://e.example/a"', 'rel="noopener noreferrer nofollow"', "</a>."],
            ['javascript:alert(1)"', 'href="javascript'],
        ),
        ("![pic](https://e.example/p.png)", ['href="https://e.example/p.png"'], ["<img"]),
        (
            "<script>alert(1)</script><img src=x onerror=alert(2)>",
            ["&lt;script&gt;", "&lt;img src=x"],
            ["<script", "<img"],
        ),
        ("snake_case_name and a_b_c stay", ["snake_case_name and a_b_c stay"], ["<em>"]),
    ],
)
def test_markdown_renders_inert_dom(
    browser: Browser, gw: Served, source: str, expected: list[str], absent: list[str]
) -> None:
    page = browser.new_page()
    page.goto(gw.http + "/")
    html = page.evaluate(RENDER, source)["html"]
    for part in expected:
        assert part in html, html
    for part in absent:
        assert part not in html, html
    page.close()


def test_markdown_stays_fast_on_hostile_input(browser: Browser, gw: Served) -> None:
    page = browser.new_page()
    page.goto(gw.http + "/")
    for source in (
        "*a" * 50_000,
        "`" * 100_000,
        "[" * 50_000 + "](",
        "| a |\n|---|\n" + "| x |\n" * 20_000,
        "x" * 400_000,
    ):
        result = page.evaluate(RENDER, source)
        assert result["ms"] < 3000, (source[:20], result["ms"])
    page.close()
