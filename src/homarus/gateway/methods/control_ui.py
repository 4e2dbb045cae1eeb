"""Methods the original's browser Control UI (2026.9.6) calls as it opens, answered in its shapes.

Some carry Homarus's data (the agents, an agent's identity, a session's description, the models'
auth, the chat start page); the rest belong to features Homarus does not have (boards, projects,
tasks, questions, talk/voice, GitHub, session groups and branches, mentions, preferences): they
answer the original's own empty shape, so the UI hides those panels instead of showing an error.
Which is which is in docs/openclaw-compat.md. Shapes taken from the original's answers to the same
calls (recorded against its gateway with its UI).
"""

from __future__ import annotations

import os
import platform
import shutil
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from homarus.errors import NotFound
from homarus.gateway.router import MethodCall, Params
from homarus.gateway.services.health import process_memory
from homarus.protocol.compat import compat_params

__all__: list[str] = []

_KEY = Field(default=None, max_length=512)
_AGENT = Field(default=None, alias="agentId", max_length=64)
_THINKING = {"thinkingLevels": [{"id": "off", "label": "off"}], "thinkingOptions": ["off"], "thinkingDefault": "off"}


#: the parameters of a feature Homarus answers with the original's empty shape
ABSENT = "the feature is absent from Homarus: the answer is the original's empty shape"


class AgentParams(Params):
    agent_id: str | None = _AGENT


@compat_params(inert={"refresh": "credentials are read from the config and the secrets file on every call"})
class AuthStatusParams(AgentParams):
    pass


@compat_params(inert={"sessionKey": ABSENT})
class SuggestionsParams(AgentParams):
    pass


class SessionParams(Params):
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    agent_id: str | None = _AGENT


@compat_params(inert={"authProfileId": "Homarus keeps one credential per provider, no auth profiles"})
class MetadataParams(SessionParams):
    pass


@compat_params(inert={"idempotencyKey": ABSENT})
class GitHubParams(SessionParams):
    pass


@compat_params(
    inert={
        "includeDerivedTitles": "a session's title is its label or display name",
        "includeLastMessage": "the last message is in chat.history and sessions.list (includeLastMessage)",
    }
)
class DescribeParams(Params):
    key: str = Field(min_length=1, max_length=512)
    agent_id: str | None = _AGENT


@compat_params(inert={"refreshCheckout": "Homarus is updated with its installer, not from the gateway"})
class UpdateStatusParams(Params):
    pass


@compat_params(inert={"includeObserved": ABSENT})
class ProjectsParams(Params):
    pass


@compat_params(inert={"provider": ABSENT, "model": ABSENT})
class TalkParams(Params):
    pass


class VisibilityParams(Params):
    visible: bool | None = None


class StartupParams(Params):
    session_key: str = Field(alias="sessionKey", min_length=1, max_length=512)
    limit: int = Field(default=80, ge=1, le=1000)
    max_bytes: int | None = Field(default=None, alias="maxBytes", ge=1, le=10_000_000)


class SubscribeParams(Params):
    key: str = Field(min_length=1, max_length=512)
    include_approvals: bool | None = Field(default=None, alias="includeApprovals")


@compat_params(inert={"cursor": ABSENT})
class TasksParams(Params):
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    agent_id: str | None = _AGENT
    status: list[str] | None = Field(default=None, max_length=20)
    sort_by: str | None = Field(default=None, alias="sortBy", max_length=32)
    limit: int | None = Field(default=None, ge=1, le=1000)


class KeysParams(Params):
    session_keys: list[str] = Field(default_factory=list, alias="sessionKeys", max_length=1000)


class PrefsParams(Params):
    keys: list[str] = Field(default_factory=list, max_length=200)


class SurfaceParams(Params):
    surface: str = Field(min_length=1, max_length=64)
    observed_url: str | None = Field(default=None, alias="observedUrl", max_length=2048)


@compat_params(inert={n: ABSENT for n in ("catalogId", "cursors", "hostIds", "metadataOnly", "search")})
class CatalogParams(Params):
    agent_id: str | None = _AGENT
    limit_per_host: int | None = Field(default=None, alias="limitPerHost", ge=1, le=1000)
    progress_id: str | None = Field(default=None, alias="progressId", max_length=128)
    allow_partial_results: bool | None = Field(default=None, alias="allowPartialResults")


def _agent_row(call: MethodCall, agent_id: str) -> dict[str, Any]:
    cfg = call.gateway.config
    entry = next((a for a in cfg.agents.list if a.id == agent_id), None)
    model = (entry.model if entry and entry.model else None) or cfg.agents.defaults.model
    return {
        "id": agent_id,
        "kind": "agent",
        "workspace": str(call.gateway.workspace_dir(agent_id)),
        "model": {"primary": model.primary} if model.primary else {},
        **_THINKING,
    }


async def agents_list(call: MethodCall, p: Params) -> dict[str, Any]:
    cfg = call.gateway.config
    return {
        "defaultId": cfg.agents.default_id,
        "ownership": "sole",
        "selectionRequired": False,
        "mainKey": cfg.session.main_key,
        "scope": cfg.session.scope,
        "agents": [_agent_row(call, a) for a in cfg.agents.ids],
    }


async def agent_identity_get(call: MethodCall, p: SessionParams) -> dict[str, Any]:
    cfg = call.gateway.config
    owner = call.gateway.sessions.resolve_key(p.session_key).agent_id if p.session_key else None
    agent_id = p.agent_id or owner or cfg.agents.default_id
    if agent_id not in cfg.agents.ids:
        raise NotFound(f"unknown agent: {agent_id}")
    entry = next((a for a in cfg.agents.list if a.id == agent_id), None)
    name = entry.name if entry and entry.name else "Assistant"
    return {
        "agentId": agent_id,
        "name": name,
        "nameSource": "config" if entry and entry.name else "default",
        "avatar": name[:1],
    }


async def models_auth_status(call: MethodCall, p: AgentParams) -> dict[str, Any]:
    providers = []
    for provider_id, provider in call.gateway.config.models.providers.items():
        env = f"{provider_id.upper().replace('-', '_')}_API_KEY"
        source = "config" if provider.api_key is not None else ("env" if os.environ.get(env) else "none")
        status = "static" if source != "none" or provider.api in ("scripted",) else "missing"
        providers.append(
            {
                "provider": provider_id,
                "authProvider": provider_id,
                "displayName": provider_id,
                "status": status,
                "profiles": [],
                "apiKey": {"source": source},
            }
        )
    return {"ts": int(time.time() * 1000), "providers": providers, "providerCapabilities": []}


async def sessions_describe(call: MethodCall, p: DescribeParams) -> dict[str, Any]:
    mgr = call.gateway.sessions
    key = mgr.resolve_key(p.key, p.agent_id)
    ref = mgr.get(key)
    main = key.canonical == f"agent:{key.agent_id}:{call.gateway.config.session.main_key}"
    if ref is None and not main:
        raise NotFound(f"session not found: {key}")
    if ref is None:  # the main session is there from the start: described before its first message
        now = int(time.time() * 1000)
        return {
            "session": {
                "key": key.canonical,
                "agentId": key.agent_id,
                "kind": "direct",
                "classification": "main",
                "isMain": True,
                "isBackground": False,
                "visibility": "shared",
                "createdAt": now,
                "updatedAt": now,
                "participants": [],
                "expandedParticipants": [],
                "participantCount": 0,
            }
        }
    e = ref.entry
    return {
        "session": {
            "key": key.canonical,
            "agentId": key.agent_id,
            "sessionId": e.session_id,
            "kind": "direct",
            "classification": "main" if main else "session",
            "isMain": main,
            "isBackground": False,
            "visibility": "shared",
            "label": e.label,
            "displayName": e.display_name or e.label,
            "createdAt": e.created_at,
            "updatedAt": e.updated_at,
            "participants": [],
            "expandedParticipants": [],
            "participantCount": 0,
        }
    }


async def chat_startup(call: MethodCall, p: StartupParams) -> dict[str, Any]:
    from homarus.gateway.methods.chat_history import HistoryParams, chat_history

    history = HistoryParams.model_validate(
        {"sessionKey": p.session_key, "limit": p.limit, **({"maxBytes": p.max_bytes} if p.max_bytes else {})}
    )
    return await chat_history(call, history)


async def chat_metadata(call: MethodCall, p: SessionParams) -> dict[str, Any]:
    from homarus.gateway.methods.models import ListParams, models_list

    models = (await models_list(call, ListParams()))["models"]
    return {"models": models, "commands": []}


async def messages_subscribe(call: MethodCall, p: SubscribeParams) -> dict[str, Any]:
    key = call.gateway.sessions.resolve_key(p.key).canonical
    # a targeted connection gets this session's run events from now on (the others get them all)
    call.gateway.bus.watch_session(call.client.conn_id, key)
    replay = {"sessionKey": key, "updatedAtMs": int(time.time() * 1000), "approvals": [], "truncated": False}
    return {"subscribed": True, "key": key, **({"approvalReplay": replay} if p.include_approvals else {})}


async def messages_unsubscribe(call: MethodCall, p: SubscribeParams) -> dict[str, Any]:
    key = call.gateway.sessions.resolve_key(p.key).canonical
    call.gateway.bus.unwatch_session(call.client.conn_id, key)
    return {"subscribed": False, "key": key}


async def observer_visibility(call: MethodCall, p: VisibilityParams) -> dict[str, Any]:
    return {"ok": True}


async def update_status(call: MethodCall, p: Params) -> dict[str, Any]:
    # Homarus is updated with git and make install, never by the gateway itself
    schedule = {"channel": "stable", "autoEnabled": False}
    return {"sentinel": None, "updateAvailable": None, "effectiveChannel": "stable", "schedule": schedule}


async def projects_list(call: MethodCall, p: Params) -> dict[str, Any]:
    cfg = call.gateway.config
    projects = [
        {
            "id": f"workspace:{a}",
            "displayName": "workspace",
            "repoRoot": str(call.gateway.workspace_dir(a)),
            "source": "workspace",
            "agentId": a,
        }
        for a in cfg.agents.ids
    ]
    return {"projects": projects, "recents": []}


async def system_info(call: MethodCall, p: Params) -> dict[str, Any]:
    uname = platform.uname()
    return {
        "machineName": uname.node,
        "hostname": uname.node,
        "platform": uname.system.lower(),
        "release": uname.release,
        "arch": uname.machine,
        "port": call.gateway.options.port,
        "pid": os.getpid(),
        "uptimeMs": call.gateway.uptime_ms(),
        "cpuCount": os.cpu_count(),
        "cpuModel": _cpu_model(),
        "loadAverage": list(os.getloadavg()),
        "osLabel": f"{uname.system} {uname.release}",
        "pythonVersion": platform.python_version(),
        "processInstanceId": call.gateway.boot_id,
        "eventLoop": call.gateway.loop_health.snapshot(),
        "processMemory": process_memory(),
        **_memory(),
        **_disk(call.gateway.paths.state_dir),
        "defaultAgentUtilityModel": {"status": "unavailable"},
    }


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory() -> dict[str, int]:
    """Total and available memory from ``/proc/meminfo`` (empty elsewhere)."""
    fields: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in ("MemTotal", "MemAvailable"):
                    fields[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    if len(fields) != 2:
        return {}
    return {"memoryTotalBytes": fields["MemTotal"], "memoryFreeBytes": fields["MemAvailable"]}


def _disk(state_dir: Path) -> dict[str, Any]:
    """The disk holding the state directory (where sessions, transcripts and the ledger grow)."""
    try:
        usage = shutil.disk_usage(state_dir)
    except OSError:
        return {"disks": []}
    return {
        "disks": [{"path": str(state_dir), "totalBytes": usage.total, "availableBytes": usage.free}],
        "diskTotalBytes": usage.total,
        "diskAvailableBytes": usage.free,
        "diskPath": str(state_dir),
    }


# -- features Homarus does not have: the original's empty answers ------------------------------------
async def empty_list(call: MethodCall, p: Params) -> list[Any]:
    return []


async def question_list(call: MethodCall, p: Params) -> dict[str, Any]:
    return {"questions": []}


async def talk_catalog(call: MethodCall, p: Params) -> dict[str, Any]:
    return {"modes": [], "transports": [], "brains": [], "speech": {"providers": []}}


async def progress_card(call: MethodCall, p: SessionParams) -> dict[str, Any]:
    return {"card": None}


async def branches_list(call: MethodCall, p: SessionParams) -> dict[str, Any]:
    return {"branches": []}


async def companion_state(call: MethodCall, p: SessionParams) -> dict[str, Any]:
    return {"exchanges": []}


async def tasks_list(call: MethodCall, p: TasksParams) -> dict[str, Any]:
    return {"tasks": []}


async def board_get(call: MethodCall, p: SessionParams) -> dict[str, Any]:
    return {"sessionKey": p.session_key, "revision": 0, "tabs": [], "widgets": []}


async def plugins_control_ui(call: MethodCall, p: Params) -> dict[str, Any]:
    return {"revision": "0", "plugins": [], "diagnostics": []}


async def surface_refresh(call: MethodCall, p: SurfaceParams) -> dict[str, Any]:
    return {"surface": p.surface, "pluginSurfaceUrls": {}, "expiresAtMs": int(time.time() * 1000)}


async def pull_requests_subscribe(call: MethodCall, p: KeysParams) -> dict[str, Any]:
    return {"subscribed": False}


async def viewers_set(call: MethodCall, p: KeysParams) -> dict[str, Any]:
    return {"sessionKeys": p.session_keys}


async def github_options(call: MethodCall, p: SessionParams) -> dict[str, Any]:
    personal = {
        "state": "disconnected",
        "generation": None,
        "account": None,
        "accessExpiresAtMs": None,
        "refreshState": "not_applicable",
        "pending": None,
    }
    return {"personal": personal, "shared": None, "pendingPersonal": None, "latestShared": None}


async def members_evidence(call: MethodCall, p: SessionParams) -> dict[str, Any]:
    return {
        "sessionKey": p.session_key,
        "members": [],
        "identities": [],
        "role": "admin",
        "allowedVisibilities": ["shared"],
    }


async def prefs_get(call: MethodCall, p: PrefsParams) -> dict[str, Any]:
    return {"status": "ok", "entries": {}}


async def users_list(call: MethodCall, p: Params) -> dict[str, Any]:
    """A single-user gateway has no user profiles: the original's answer for one, word for word."""
    return {"profiles": []}


async def groups_list(call: MethodCall, p: Params) -> dict[str, Any]:
    return {"groups": [], "sectionOrder": []}


async def groups_defaults(call: MethodCall, p: Params) -> dict[str, Any]:
    return {"defaults": []}


async def mentions_list(call: MethodCall, p: Params) -> dict[str, Any]:
    return {"gatewayInstanceId": call.gateway.boot_id, "revision": 0, "items": []}


async def suggestions_list(call: MethodCall, p: AgentParams) -> dict[str, Any]:
    return {"suggestions": []}


async def discussion_info(call: MethodCall, p: SessionParams) -> dict[str, Any]:
    return {"state": "none"}


async def catalog_list(call: MethodCall, p: CatalogParams) -> dict[str, Any]:
    return {"catalogs": []}


@compat_params(inert={"projection": ABSENT, "runtimeId": ABSENT})
class EnvironmentsParams(Params):
    include_desktop_setup: bool | None = Field(default=None, alias="includeDesktopSetup")


@compat_params(inert={"category": ABSENT, "searchSource": ABSENT})
class BrowseParams(Params):
    intent: str | None = Field(default=None, max_length=32)
    page_size: int | None = Field(default=None, alias="pageSize", ge=1, le=500)
    cursor: str | None = Field(default=None, max_length=256)
    query: str | None = Field(default=None, max_length=200)


async def environments_list(call: MethodCall, p: EnvironmentsParams) -> dict[str, Any]:
    """The one place Homarus runs agents: the gateway's own host (no remote desktops or workers)."""
    env = {
        "id": "gateway",
        "type": "local",
        "label": "Gateway local",
        "status": "available",
        "platform": platform.system().lower(),
        "sessionHost": True,
        "trust": "persistent",
        "capabilities": ["agent.run", "sessions", "tools", "workspace"],
    }
    return {"environments": [env]}


async def plugins_catalog_browse(call: MethodCall, p: BrowseParams) -> dict[str, Any]:
    """No plugin marketplace (the original's ClawHub): nothing to browse; installed plugins are in
    ``plugins.list``."""
    return {"items": []}
