"""The ``browser`` tool: the agent drives its headless Chromium.

The model reads a page through ``snapshot`` (an outline with element refs) and acts on refs;
everything a page says reaches the model inside the untrusted-content wrapper. A navigation to a
blocked address answers "blocked" (nothing was fetched); a ref that is no longer on the page says
so; ``evaluate`` runs only when ``browser.allowEvaluate`` is on; sandboxed sessions get no browser
unless ``sandbox.browser.enabled``, and then one with a throw-away profile of their own; so does a
run sent by someone other than an owner (who gets the tool only when ``strangerTools`` names it).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from homarus.browser.egress import REDIRECT_HEADER
from homarus.browser.manager import BrowserUnavailable
from homarus.browser.snapshot import SNAPSHOT_JS, ref_selector, valid_ref
from homarus.errors import InvalidRequest
from homarus.messages import ImageContent, TextContent
from homarus.security.external_content import wrap_external_content
from homarus.tools.base import Tool, ToolContext, ToolResult, tool_from_function

if TYPE_CHECKING:
    from playwright.async_api import Page

    from homarus.browser.manager import AgentBrowser, BrowserHub

__all__ = ["make_browser_tool"]

Action = Literal[
    "status", "start", "stop", "tabs", "open", "navigate", "snapshot", "click", "type", "select", "press",
    "hover", "scroll", "wait", "screenshot", "pdf", "console", "evaluate",
]  # fmt: skip


def _page_text(text: str, url: str) -> TextContent:
    return TextContent(wrap_external_content(text, source="web page (browser)", meta={"URL": url}))


def make_browser_tool(hub: Callable[[], BrowserHub]) -> Tool:
    async def browser(
        ctx: ToolContext,
        action: Action,
        url: Annotated[str | None, Field(max_length=8192)] = None,
        ref: Annotated[str | None, Field(max_length=12)] = None,
        text: Annotated[str | None, Field(max_length=100_000)] = None,
        key: Annotated[str | None, Field(max_length=64)] = None,
        values: Annotated[list[str] | None, Field(max_length=50)] = None,
        submit: bool = False,
        direction: Literal["up", "down"] = "down",
        ms: Annotated[int | None, Field(ge=0, le=60_000)] = None,
        full_page: bool = False,
        expression: Annotated[str | None, Field(max_length=20_000)] = None,
    ) -> ToolResult:
        """Drive a headless web browser: open/navigate a URL, snapshot the page (an outline whose
        elements carry refs like e12), click/type/select/press/hover by ref, scroll, wait, take a
        screenshot or a PDF, read the console. Private and local addresses are blocked."""
        # a sandboxed session, or a run sent by someone other than an owner (granted the tool by
        # strangerTools): the throw-away profile, never the owner's logins
        sandboxed = ctx.sandbox is not None or not ctx.trusted
        if ctx.sandbox is not None and not ctx.sandbox.browser:
            return ToolResult.text(
                "the browser is not available in sandboxed sessions (sandbox.browser.enabled is off)", is_error=True
            )
        owner = hub()
        if action == "status":
            return ToolResult.text(_describe(owner.status(ctx.agent_id, sandboxed=sandboxed)))
        try:
            agent = await owner.for_agent(ctx.agent_id, sandboxed=sandboxed)
            if action == "stop":
                await agent.stop()
                return ToolResult.text("browser stopped")
            if action == "start":
                await agent.start()
                return ToolResult.text("browser started")
            if action == "tabs":
                await agent.start()
                return ToolResult.text(_describe(owner.status(ctx.agent_id, sandboxed=sandboxed)))
            with agent.in_use():
                return await _act(agent, ctx, action, locals())
        except BrowserUnavailable as exc:
            return ToolResult.text(str(exc), is_error=True)

    return tool_from_function(
        browser, tags=frozenset({"browser"}), summary="drive a headless web browser", deferred=True
    )


def _describe(status: dict[str, Any]) -> str:
    tabs = "\n".join(f"- {t['session']}: {t['url']}" for t in status["tabs"]) or "no tabs"
    return f"browser {'running' if status['running'] else 'not running'}\n{tabs}"


async def _act(agent: AgentBrowser, ctx: ToolContext, action: str, a: dict[str, Any]) -> ToolResult:
    cfg = agent.cfg
    fresh = action in ("open", "navigate")
    page = await agent.tab(ctx.session_key, create=fresh)
    if fresh:
        if not a["url"]:
            raise InvalidRequest(f"{action} needs url")
        return await _navigate(agent, page, a["url"], ctx.session_key)
    if action == "snapshot":
        return await _snapshot(agent, page, ctx.session_key)
    before = agent.egress.mark()
    if action in ("click", "type", "select", "hover"):
        target = await _target(page, a["ref"])
        if action == "click":
            await target.click()
        elif action == "hover":
            await target.hover()
        elif action == "type":
            await target.fill(a["text"] or "")
            if a["submit"]:
                await target.press("Enter")
        else:
            await target.select_option(a["values"] or ([a["text"]] if a["text"] else []))
        await _settle(page)
        return ToolResult.text(f"{action} {a['ref']}: done; now at {page.url}" + _blocked_note(agent, page, before))
    if action == "press":
        if not a["key"]:
            raise InvalidRequest("press needs key (e.g. Enter, Tab, ArrowDown)")
        if a["ref"]:
            await (await _target(page, a["ref"])).press(a["key"])
        else:
            await page.keyboard.press(a["key"])
        await _settle(page)
        return ToolResult.text(f"pressed {a['key']}; now at {page.url}" + _blocked_note(agent, page, before))
    if action == "scroll":
        if a["ref"]:
            await (await _target(page, a["ref"])).scroll_into_view_if_needed()
        else:
            await page.mouse.wheel(0, 700 if a["direction"] == "down" else -700)
        return ToolResult.text("scrolled")
    if action == "wait":
        if a["text"]:
            await page.get_by_text(a["text"]).first.wait_for(timeout=cfg.timeout_ms)
            return ToolResult.text(f"{a['text']!r} is on the page")
        await page.wait_for_timeout(min(a["ms"] or 1000, 60_000))
        return ToolResult.text("waited")
    if action == "screenshot":
        data = await page.screenshot(full_page=a["full_page"], type="png")
        if len(data) > cfg.max_screenshot_bytes:
            return ToolResult.text(
                f"the screenshot is {len(data)} bytes, over browser.maxScreenshotBytes; take it without full_page",
                is_error=True,
            )
        return ToolResult([ImageContent(base64.b64encode(data).decode(), "image/png")], details={"bytes": len(data)})
    if action == "pdf":
        out = ctx.workspace / "browser" / f"page-{int(time.time() * 1000)}.pdf"
        out.parent.mkdir(parents=True, exist_ok=True)
        await page.pdf(path=str(out))
        return ToolResult.text(f"saved {out.relative_to(ctx.workspace)} ({out.stat().st_size} bytes)")
    if action == "console":
        lines = list(agent.console.get(ctx.session_key, ()))[-50:]
        return ToolResult([_page_text("\n".join(lines) or "(no console messages)", page.url)])
    if action == "evaluate":
        if not cfg.allow_evaluate:
            return ToolResult.text("evaluate is off (browser.allowEvaluate)", is_error=True)
        if not a["expression"]:
            raise InvalidRequest("evaluate needs expression")
        value = await page.evaluate(a["expression"])
        return ToolResult([_page_text(repr(value)[: cfg.max_snapshot_chars], page.url)])
    raise InvalidRequest(f"unknown action {action!r}")


async def _navigate(agent: AgentBrowser, page: Page, url: str, session_key: str) -> ToolResult:
    why = await agent.egress.check(url)
    if why is not None:
        return ToolResult.text(f"blocked: {url} ({why}); nothing was fetched", is_error=True)
    before = agent.egress.mark()
    try:
        response = await page.goto(url, wait_until="domcontentloaded")
    except Exception as exc:
        refused = agent.egress.since(before, page)
        await agent.close_tab(session_key)  # the next action gets a fresh tab, not Chromium's error page
        if refused:
            where, reason = refused[-1]
            return ToolResult.text(f"blocked: {where} ({reason}); nothing was fetched from it", is_error=True)
        return ToolResult.text(f"navigation failed: {str(exc).splitlines()[0]}", is_error=True)
    status: Any = response.status if response is not None else "?"
    target = response.headers.get(REDIRECT_HEADER) if response is not None else None
    while target is not None:  # a checked redirect: the stand-in page navigates on to its target
        try:
            await page.wait_for_url(target, wait_until="domcontentloaded")
        except Exception:
            refused = agent.egress.since(before, page)
            await agent.close_tab(session_key)
            reason = f"{refused[-1][0]} ({refused[-1][1]})" if refused else target
            return ToolResult.text(f"blocked: {reason}; nothing was fetched from it", is_error=True)
        landed = agent.documents.get(session_key)
        status, target = (landed[1], landed[2]) if landed and landed[0] == page.url else ("?", None)
    title = await page.title()
    return ToolResult.text(f"opened {page.url} (HTTP {status}), title {title!r}" + _blocked_note(agent, page, before))


async def _snapshot(agent: AgentBrowser, page: Page, session_key: str) -> ToolResult:
    start = agent.ref_seq.get(session_key, 0)
    snap = await page.evaluate(SNAPSHOT_JS, {"maxChars": agent.cfg.max_snapshot_chars, "start": start})
    agent.ref_seq[session_key] = max(start, int(snap.get("seq") or 0))
    body = "\n".join(snap["lines"]) or "(nothing visible)"
    if snap["truncated"]:
        body += f"\n[… cut at {agent.cfg.max_snapshot_chars} characters: scroll or snapshot again]"
    text = f"Page: {snap['title']}\n{body}"
    return ToolResult([_page_text(text, snap["url"])], details={"url": snap["url"]})


async def _target(page: Page, ref: str | None) -> Any:
    if not ref or not valid_ref(ref):
        raise InvalidRequest("this action needs ref (like e12, from a snapshot)")
    locator = page.locator(ref_selector(ref))
    if await locator.count() == 0:
        raise InvalidRequest(f"ref {ref} is not on the page any more (it changed): take a new snapshot")
    return locator.first


async def _settle(page: Page) -> None:
    try:
        await page.wait_for_load_state("domcontentloaded", timeout=3000)
    except Exception:  # no navigation happened, or a slow one: the next snapshot shows where it stands
        return


def _blocked_note(agent: AgentBrowser, page: Page, before: int) -> str:
    """The requests the page made during this action that were refused (a redirect, a resource)."""
    refused = agent.egress.since(before, page)
    if not refused:
        return ""
    url, why = refused[-1]
    return f"\n({len(refused)} request(s) blocked, the last: {url}: {why})"
