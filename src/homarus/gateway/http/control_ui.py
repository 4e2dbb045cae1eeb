"""The browser Control UI: static files shipped in the package, served under ``controlUi.basePath``.

The UI is plain ES modules, HTML and CSS in ``homarus/webui/`` (no build step). They are read once
when the routes are built and served from memory with an ETag (revalidated on every load: file
names carry no content hash, so ``no-cache`` keeps an upgraded gateway from serving stale code).

Every UI response carries a strict CSP (scripts and styles only from the gateway itself, no inline
code, no frames, no plugins, no ``<base>``) and ``X-Frame-Options: DENY``. The page embeds nothing
about the gateway: the operator types the token into the page, which talks the ordinary
WebSocket protocol like any other client.

Unmatched GET/HEAD paths under the base path get ``index.html`` (the UI routes with ``#`` hashes,
so this only keeps bookmarked deep links working). Paths the gateway or other subsystems own are
excluded so that, say, ``GET /v1/chat/completions`` still answers 405 instead of a web page. The
catch-all must be the last route.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Match, Route
from starlette.types import Scope

from homarus.gateway.errors import plain_error
from homarus.gateway.http.plugin_routes import CORE_PATHS

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["CSP", "UI_HEADERS", "control_ui_routes"]

CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "font-src 'self'",
        # 'self' covers ws:/wss: to the same host:port in CSP3 browsers; nothing else may be reached
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
UI_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}
#: top-level paths never answered with the UI page when it sits at the root
_RESERVED_EXACT = frozenset({"/health", "/healthz", "/ready", "/readyz"})
_RESERVED_PREFIXES = (*CORE_PATHS, "/sessions", "/plugins", "/api", "/ui", "/__openclaw__")
_BASE_MARK = "{{base}}"


@dataclass(frozen=True, slots=True)
class _Asset:
    body: bytes
    content_type: str
    etag: str


def _load_assets(root: Traversable, base: str) -> dict[str, _Asset]:
    """Every servable file of the UI directory by name; ``index.html`` gets the base path filled in."""
    assets: dict[str, _Asset] = {}
    if not root.is_dir():
        return assets
    for item in root.iterdir():
        suffix = "." + item.name.rsplit(".", 1)[-1] if "." in item.name else ""
        if not item.is_file() or suffix not in _CONTENT_TYPES or item.name.startswith("."):
            continue
        body = item.read_bytes()
        if item.name == "index.html":
            body = body.replace(_BASE_MARK.encode(), base.encode())
        assets[item.name] = _Asset(body, _CONTENT_TYPES[suffix], _etag(body))
    return assets


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _serve(request: Request, asset: _Asset) -> Response:
    headers = {**UI_HEADERS, "ETag": asset.etag, "Cache-Control": "no-cache"}
    inm = request.headers.get("if-none-match", "")
    if asset.etag in (tag.strip() for tag in inm.split(",")):
        return Response(status_code=304, headers=headers)
    body = b"" if request.method == "HEAD" else asset.body
    response = Response(body, media_type=asset.content_type, headers=headers)
    response.headers["content-length"] = str(len(asset.body))
    return response


class _SpaRoute(Route):
    """A GET/HEAD catch-all under the base path that leaves reserved paths to other routes."""

    def __init__(self, prefix: str, endpoint: object) -> None:
        super().__init__(prefix + "/{rest:path}", endpoint, methods=["GET", "HEAD"])  # type: ignore[arg-type]
        self._root = not prefix
        # a missing asset is a 404, not the page (a script tag must not receive HTML)
        self._own = (prefix + "/assets/", prefix + "/__homarus/")

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            return Match.NONE, {}  # other methods fall through to 404, not 405
        path: str = scope["path"]
        if path.startswith(self._own) or path + "/" in self._own:
            return Match.NONE, {}
        if self._root and (
            path in _RESERVED_EXACT or any(path == p or path.startswith(p + "/") for p in _RESERVED_PREFIXES)
        ):
            return Match.NONE, {}
        return super().matches(scope)


def control_ui_routes(gateway: GatewayContext, root: Traversable | None = None) -> list[Route]:
    """The UI's routes (none when ``gateway.controlUi.enabled`` is false at startup); add them last."""
    cfg = gateway.config.gateway.control_ui
    if not cfg.enabled:
        return []
    prefix = cfg.prefix
    loaded: list[dict[str, _Asset]] = []

    def assets() -> dict[str, _Asset]:
        # read on the first request, not at start: a gateway nobody browses never reads them
        if not loaded:
            loaded.append(_load_assets(root or resources.files("homarus") / "webui", prefix + "/"))
        return loaded[0]

    # public (no auth): what the page needs before it connects, nothing about the gateway itself
    bootstrap = json.dumps({"basePath": cfg.base_path, "assistantName": "Homarus"}).encode()
    bootstrap_asset = _Asset(bootstrap, "application/json; charset=utf-8", _etag(bootstrap))

    def enabled() -> bool:
        # routes are built once; a config change that turns the UI off takes effect at once
        return gateway.config.gateway.control_ui.enabled

    async def page(request: Request) -> Response:
        if not enabled():
            return plain_error(404, "Not Found")
        index = assets().get("index.html")
        if index is None:
            return plain_error(503, "Control UI assets are missing from this installation")
        return _serve(request, index)

    async def asset(request: Request) -> Response:
        if not enabled():
            return plain_error(404, "Not Found")
        if not assets():
            return plain_error(503, "Control UI assets are missing from this installation")
        found = assets().get(request.path_params["name"])
        if found is None or found.content_type.startswith("text/html"):
            return plain_error(404, "Not Found")
        return _serve(request, found)

    async def config_json(request: Request) -> Response:
        if not enabled():
            return plain_error(404, "Not Found")
        return _serve(request, bootstrap_asset)

    get = ["GET", "HEAD"]
    routes: list[Route] = []
    if prefix:

        async def redirect(request: Request) -> Response:
            return RedirectResponse(prefix + "/", status_code=302)

        routes.append(Route(prefix, redirect, methods=get))
    routes += [
        Route(prefix + "/assets/{name}", asset, methods=get),
        Route(prefix + "/__homarus/control-ui-config.json", config_json, methods=get),
        _SpaRoute(prefix, page),
    ]
    return routes
