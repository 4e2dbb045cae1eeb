"""What the original's Control UI asks for on its other views (Settings, Skills, Debug, Search,
Memory, Meetings, Worktrees), answered from Homarus's state where Homarus has the thing, and
with the original's own answer for "none" where it does not (no themes to choose, no GitHub
identity, no skill library, no dreaming): each view then loads and says so, instead of failing.
``docs/openclaw-compat.md`` lists which is which.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.gateway.router import EmptyParams, MethodCall, Params
from homarus.protocol.compat import compat_params

__all__: list[str] = []

_AGENT = Field(default=None, alias="agentId", min_length=1, max_length=64)


class AgentParams(Params):
    agent_id: str | None = _AGENT


class LimitParams(Params):
    limit: int | None = Field(default=None, ge=1, le=1000)
    cursor: str | None = Field(default=None, max_length=256)


class HistoryParams(LimitParams):
    kind: str | None = Field(default=None, max_length=64)


class TranscriptsParams(LimitParams):
    agent_id: str | None = _AGENT
    account_id: str | None = Field(default=None, alias="accountId", max_length=64)
    provider_id: str | None = Field(default=None, alias="providerId", max_length=64)
    query: str | None = Field(default=None, max_length=200)
    started_after: int | None = Field(default=None, alias="startedAfter", ge=0)
    started_before: int | None = Field(default=None, alias="startedBefore", ge=0)


@compat_params(
    inert={
        "modelId": "the search route does not depend on the model here",
        "modelProvider": "the search route does not depend on the model here",
    }
)
class WebSearchParams(Params):
    agent_id: str | None = _AGENT


@compat_params(inert={"selectedScope": "there is one identity scope: none is configured"})
class GitHubParams(Params):
    agent_id: str | None = _AGENT


@compat_params(inert={"overwrite": "nothing is imported through the gateway (homarus migrate openclaw)"})
class MigrationParams(Params):
    agent_id: str | None = _AGENT


class LibraryParams(Params):
    scope: Literal["all", "workspace", "profile"] | None = None
    agent_id: str | None = _AGENT
    session_key: str | None = Field(default=None, alias="sessionKey", min_length=1, max_length=512)


class SearchParams(Params):
    query: str | None = Field(default=None, max_length=200)
    limit: int | None = Field(default=None, ge=1, le=100)
    agent_id: str | None = _AGENT


#: the one theme the original's UI ships as its default: Homarus keeps no theme choice
_CLAW: dict[str, Any] = {
    "id": "claw",
    "name": "Claw",
    "description": "The Control UI's default theme (Homarus keeps no theme choice of its own).",
    "source": "builtin",
    "modes": ["light", "dark"],
}
_NO_IDENTITY: dict[str, Any] = {
    "source": "system-detected",
    "credentialKind": "native",
    "credentialState": "unavailable",
    "account": None,
    "gitAuthor": {"name": None, "email": None},
    "evidence": "none",
    "accessExpiresAtMs": None,
    "refreshState": "not_applicable",
    "oauthScopes": [],
    "repositoryGrants": "unknown",
}


async def themes_list(call: MethodCall, p: Params) -> dict[str, Any]:
    current = {"id": "claw", "mode": "system", "scope": "gateway", "overrides": {}}
    return {"current": current, "theme": _CLAW, "themes": [_CLAW]}


async def github_status(call: MethodCall, p: GitHubParams) -> dict[str, Any]:
    agent = p.agent_id or call.gateway.config.agents.default_id
    selected = {"scope": "system", "configured": False, "identity": _NO_IDENTITY}
    return {"agentId": agent, "selectedScope": "system", "selected": selected, "effective": _NO_IDENTITY}


async def approval_history(call: MethodCall, p: HistoryParams) -> dict[str, Any]:
    """Resolved approvals are not kept past their decision (the audit trail records each tool
    call's decision: audit.activity.list, homarus logs)."""
    return {"items": []}


async def memory_doctor_status(call: MethodCall, p: AgentParams) -> dict[str, Any]:
    """The memory page's dreaming panel: Homarus does not dream (no short-term recall promotion);
    its memory index is checked by ``homarus doctor`` and ``memory.status``."""
    agent = p.agent_id or call.gateway.config.agents.default_id
    phase = {"enabled": False, "managedCronPresent": False}
    return {
        "agentId": agent,
        "provider": None,
        "embedding": {"ok": False, "checked": False, "error": "see memory.status (homarus memory status)"},
        "dreaming": {
            "enabled": False,
            "verboseLogging": False,
            "storageMode": "separate",
            "separateReports": False,
            "shortTermEntries": [],
            "signalEntries": [],
            "promotedEntries": [],
            "phases": {"light": phase, "deep": phase, "rem": phase},
            "shortTermCount": 0,
            "recallSignalCount": 0,
            "dailySignalCount": 0,
            "groundedSignalCount": 0,
            "totalSignalCount": 0,
            "phaseSignalCount": 0,
            "lightPhaseHitCount": 0,
            "remPhaseHitCount": 0,
            "promotedTotal": 0,
            "promotedToday": 0,
        },
    }


_SEARCH_LABELS = {"brave": "Brave Search", "searxng": "SearXNG", "tavily": "Tavily"}


async def web_search_status(call: MethodCall, p: WebSearchParams) -> dict[str, Any]:
    """The web_search tool's provider (``tools.web.search``): Brave, SearXNG or Tavily."""
    cfg = call.gateway.config
    search = cfg.tools.web.search
    agent = p.agent_id or cfg.agents.default_id
    providers = []
    for pid, label in _SEARCH_LABELS.items():
        chosen = search.provider == pid
        keyed = pid == "searxng" or (chosen and search.api_key is not None)
        providers.append(
            {
                "id": pid,
                "pluginId": pid,
                "label": label,
                "configured": chosen,
                "installed": True,
                "available": chosen and keyed,
                "requiresCredential": pid != "searxng",
                "credentialSource": "config" if chosen and search.api_key is not None else "missing",
                "configPath": ["tools", "web", "search"],
                "credentialPath": "tools.web.search.apiKey",
            }
        )
    route: dict[str, Any]
    if search.provider is None:
        reason = "Set tools.web.search.provider (brave, searxng or tavily) to give the agents web_search."
        route = {"kind": "unavailable", "label": "No search provider configured", "testable": False, "reason": reason}
    else:
        route = {"kind": "provider", "label": _SEARCH_LABELS[search.provider], "testable": False}
    primary = cfg.agents.defaults.model.primary or ""
    provider, _, model = primary.partition("/")
    return {
        "enabled": search.provider is not None,
        "provider": search.provider,
        "agentId": agent,
        "model": {"provider": provider or None, "id": model or None, "runtime": "homarus", "runtimeLabel": "Homarus"},
        "route": route,
        "providers": providers,
    }


async def memory_migration_plan(call: MethodCall, p: MigrationParams) -> dict[str, Any]:
    """Other assistants' memories are brought over by ``homarus migrate openclaw`` on the host, not
    through the gateway: nothing to plan here."""
    agent = p.agent_id or call.gateway.config.agents.default_id
    return {"agentId": agent, "workspace": str(call.gateway.workspace_dir(agent)), "providers": []}


async def worktrees_list(call: MethodCall, p: Params) -> dict[str, Any]:
    return {"worktrees": []}


async def transcripts_list(call: MethodCall, p: TranscriptsParams) -> dict[str, Any]:
    """Meeting transcripts (the original's Talk recordings): Homarus records no meetings."""
    return {"sessions": [], "nextCursor": None}


async def skills_library(call: MethodCall, p: LibraryParams) -> dict[str, Any]:
    return {
        "entries": [],
        "profileId": None,
        "multipleProfiles": False,
        "defaultTarget": "unavailable",
        "canManageWorkspace": False,
        "defaultSelectionLimit": 64,
    }


async def skills_proposals(call: MethodCall, p: AgentParams) -> dict[str, Any]:
    return {
        "schema": "openclaw.skill-workshop.proposals-manifest.v1",
        "updatedAt": "1970-01-01T00:00:00.000Z",
        "proposals": [],
        "installedSkills": [],
    }


async def skills_curator(call: MethodCall, p: EmptyParams) -> dict[str, Any]:
    """The original's curator reviews the skills its agents write in its Workshop; Homarus has no
    Workshop, so there is nothing to curate and no review has run."""
    return {
        "inventory": "live-workshop",  # the whole (empty) inventory, not the legacy partial one
        "lastAttemptAtMs": None,
        "lastSuccessAtMs": None,
        "lastError": None,
        "counts": {"active": 0, "stale": 0, "archived": 0},
        "skills": [],
        "overlaps": [],
    }


async def skills_search(call: MethodCall, p: SearchParams) -> dict[str, Any]:
    """The original searches its ClawHub registry; Homarus installs skills from a URL or a path
    (``skills.install``, ``homarus skills install``) and searches no registry."""
    return {"results": [], "query": p.query or "", "source": "none"}


class ArtifactsParams(LimitParams):
    session_key: str | None = Field(default=None, alias="sessionKey", min_length=1, max_length=512)
    run_id: str | None = Field(default=None, alias="runId", min_length=1, max_length=256)
    task_id: str | None = Field(default=None, alias="taskId", min_length=1, max_length=256)
    agent_id: str | None = _AGENT
    type: str | None = Field(default=None, max_length=64)
    message_role: str | None = Field(default=None, alias="messageRole", max_length=32)


async def artifacts_list(call: MethodCall, p: ArtifactsParams) -> dict[str, Any]:
    """A run's files are in its workspace, not catalogued as artifacts: none to list."""
    if p.session_key is None and p.run_id is None and p.task_id is None:
        raise InvalidRequest(
            "artifacts require one of sessionKey, runId, or taskId", details={"type": "artifact_query_unsupported"}
        )
    return {"artifacts": []}


async def diagnostics_lanes(call: MethodCall, p: Params) -> dict[str, Any]:
    """The gateway's run lanes (``homarus.queue.lanes``) as they are now."""
    lanes = [
        {
            "lane": s.lane,
            "queuedCount": s.waiting,
            "activeCount": s.active,
            "maxConcurrent": s.concurrency,
            "draining": call.gateway.lanes.draining,
            "generation": 0,
            "blockedBy": None,
            "completedCount": s.completed,
        }
        for s in call.gateway.lanes.stats()
    ]
    return {"ts": int(time.time() * 1000), "lanes": lanes}
