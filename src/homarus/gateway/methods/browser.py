"""``browser.request``: the original's browser control requests, answered for the agents'
browsers (status, doctor, profiles, tabs, start, stop; ``homarus.browser.control``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from homarus.gateway.router import MethodCall, Params, not_supported

__all__: list[str] = []


class RequestParams(Params):
    method: str = Field(min_length=1, max_length=16)
    path: str = Field(min_length=1, max_length=1024)
    query: dict[str, Any] | None = None
    body: Any = None
    timeout_ms: int | None = Field(default=None, alias="timeoutMs", ge=1, le=600_000)
    target: Literal["host", "node"] | None = None
    node: str | None = Field(default=None, min_length=1, max_length=256)
    dashboard: dict[str, Any] | None = None


async def browser_request(call: MethodCall, p: RequestParams) -> dict[str, Any]:
    from homarus.browser.control import BrowserControl, UnsupportedRoute

    if p.target == "node" or p.node is not None:
        raise not_supported(call.method, "nodes are not built yet: the browser runs on the gateway's host")
    if p.dashboard is not None or p.path.strip().rstrip("/") == "/dashboard":
        raise not_supported(call.method, "browser dashboards are not a Homarus feature")
    gw = call.gateway
    cfg = gw.config
    control = BrowserControl(
        cfg.browser,
        cfg.agents.ids,
        cfg.agents.default_id,
        hub=lambda: gw.browser,
        hub_built=lambda: gw.built("browser"),
        state_dir=gw.paths.state_dir,
    )
    try:
        return await control.request(p.method, p.path, p.query or {})
    except UnsupportedRoute as exc:
        raise not_supported(call.method, str(exc)) from None
