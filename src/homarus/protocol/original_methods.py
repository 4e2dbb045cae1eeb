"""The original's gateway methods (OpenClaw 2026.9.6, the 466 its ``hello-ok`` advertises), and why
Homarus does not answer the ones it has not built.

A client of the original calls what its gateway advertised; Homarus answering such a call with
``unknown method`` or, worse, with ``missing scope: operator.admin`` (the scope an unknown method
needs) would send the user after the wrong fix. So a method of the original that Homarus does not
register is answered, whatever the caller's scopes, with ``INVALID_REQUEST`` "not supported by
Homarus: <reason>" and ``details.code`` ``NOT_SUPPORTED``; the reason comes from the first family
below that matches. A name the original does not have either stays ``unknown method``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Final

__all__ = ["GENERIC", "REASONS", "UNADVERTISED", "not_supported_reason", "original_methods"]

NO_VOICE = "voice (speech in and out, talk mode, voice wake) is not built yet"
NO_NODES = "nodes, canvas and the companion apps' device features are not built yet"
NO_PROJECTS = "projects, repositories, worktrees and environments are not a Homarus feature"
NO_USERS = "Homarus is a single-user gateway: there are no user accounts to manage"
NO_SKILL_LIBRARY = (
    "skills are folders in the workspace or the state directory (homarus skills); there is no skill "
    "library, curator, proposal queue or registry search"
)
NO_GITHUB = "GitHub integration is not a Homarus feature"
SETUP_IN_CLI = "setup runs in the CLI (homarus onboard), not through the gateway"
NO_DESKTOP = "remote desktops, terminals and portals are not a Homarus feature"
GENERIC = "not implemented (docs/openclaw-compat.md lists what Homarus answers)"

#: methods the original answers without advertising them, found calling them with its CLI
UNADVERTISED: Final = frozenset({"device.pair.setupCode"})

#: (method name or family prefix ending in ".", reason): the first match wins, so exact names and
#: longer prefixes come before the families they belong to
REASONS: Final[tuple[tuple[str, str], ...]] = (
    ("tools.github.", NO_GITHUB),
    ("users.github.", NO_GITHUB),
    ("sessions.github.", NO_GITHUB),
    ("github.", NO_GITHUB),
    ("controlUi.github", NO_GITHUB),
    ("controlUi.sessionPullRequests.", NO_GITHUB),
    ("tts.", NO_VOICE),
    ("talk.", NO_VOICE),
    ("voicewake.", NO_VOICE),
    ("node.", NO_NODES),
    ("canvas.", NO_NODES),
    ("computer.", NO_NODES),
    ("desktop.", NO_DESKTOP),
    ("worker.", NO_DESKTOP),
    ("portal.", NO_DESKTOP),
    ("terminal.", NO_DESKTOP),
    ("projects.", NO_PROJECTS),
    ("worktrees.", NO_PROJECTS),
    ("environments.", NO_PROJECTS),
    ("fs.listDir", NO_PROJECTS),
    ("users.", NO_USERS),
    ("skills.", NO_SKILL_LIBRARY),
    ("wizard.", SETUP_IN_CLI),
    ("openclaw.setup.", SETUP_IN_CLI),
    (
        "models.auth",
        "model credentials are set in the config or the environment (homarus models), not through the gateway",
    ),
    ("update.", "Homarus is updated by the package manager that installed it (pip, uv, the container image)"),
    ("themes.", "Control UI themes are not a Homarus feature"),
    ("board.", "session boards and widgets are not a Homarus feature"),
    ("mcp.app.", "MCP apps (servers' UI resources) are not supported; MCP servers' tools are (mcp.status)"),
    (
        "secrets.",
        "secrets are files and environment variables the config refers to; there is no secret store to manage",
    ),
    ("plugins.", "plugins are Python packages installed with pip and enabled in the config (homarus plugins)"),
    ("diagnostics.cpuProfile", "profiling the original's Node.js runtime has no counterpart here"),
    ("diagnostics.heapProfile", "profiling the original's Node.js runtime has no counterpart here"),
    ("gateway.suspend.", "suspending and handing a gateway over is not a Homarus feature"),
    ("gateway.restart.", "restart the service with homarus gateway restart (or its service manager)"),
    ("doctor.memory.", "memory dreaming is not a Homarus feature; homarus doctor checks the memory index"),
    ("memory.sessionBackfill.", "memory dreaming is not a Homarus feature; homarus doctor checks the memory index"),
    ("migrations.", "migration runs in the CLI (homarus migrate openclaw)"),
    ("question.", "agents do not put questions to the operator here; approvals are the one prompt"),
    ("claws.", "claws (agent packages and monitors) are not a Homarus feature"),
    ("session.", "shared sessions (members, visibility, suggestions, discussions) are not a Homarus feature"),
    ("sessions.groups.", "session groups are not a Homarus feature"),
    ("tasks.", "background tasks are not a Homarus feature; runs and cron jobs are"),
    ("taskSuggestions.", "background tasks are not a Homarus feature; runs and cron jobs are"),
    ("progressCard.", "progress cards are not a Homarus feature"),
    ("attach.", "attaching other gateways is not a Homarus feature"),
    ("push.web.", "web push is not a Homarus feature"),
    ("conversations.", "the original's conversation API: agent, chat.send and send cover it"),
    ("agents.", "agents are defined in the config (config.patch), their files live in the workspace"),
    ("approval.", "system-agent approvals are not a Homarus feature (exec and plugin approvals are)"),
    ("artifacts.", "a run's files are in its workspace, not catalogued as artifacts"),
    ("audit.", "the audit trail is read with audit.activity.list, logs.tail and homarus logs"),
    ("cron.scratch.", "per-job scratch (heartbeat monitor context) is not built"),
    ("sessions.branches.", "Homarus transcripts do not branch: a message always goes after the last one"),
    ("sessions.fork", "Homarus transcripts do not branch: a message always goes after the last one"),
    ("sessions.rewind", "Homarus transcripts do not branch: a message always goes after the last one"),
    ("sessions.catalog.", "external session catalogs (other agents' CLIs) are not a Homarus feature"),
    ("sessions.files.", "a session's files are the workspace's; read them with the agent's tools"),
    ("sessions.companion.", "session companions are not a Homarus feature"),
    ("sessions.goal.", "session goals are not a Homarus feature"),
    ("sessions.activitySummary.", "activity summaries are not a Homarus feature"),
    ("sessions.assignOwner", "Homarus is a single-user gateway: sessions have no owners to assign"),
    ("sessions.setInvolvement", "Homarus is a single-user gateway: sessions have no owners to assign"),
    ("mentions.", "mentions across shared sessions are not a Homarus feature"),
    ("device.pair.setupCode", NO_NODES),
    ("device.scopes.", "a device's scopes are set when it is approved (device.pair.approve)"),
    ("exec.approvals.", "the exec approvals file is changed by allow-always decisions and by hand"),
    ("transcripts.", "meeting transcripts (talk recordings) are not a Homarus feature"),
    ("tools.invoke", "over WebSocket it is not: POST /tools/invoke does it over HTTP"),
    ("models.probe", "homarus models test checks a model from the command line"),
    ("webSearch.test", "web_search is tested by asking the agent (tools.web.search configures it)"),
    ("diagnostics.", "profiling lives in bench/ and python -X importtime"),
    ("controlUi.", "link and session previews of the original's UI are not built"),
    ("ui.", "the original's UI automation is not built"),
    ("openclaw.", "the original's system agent is not a Homarus feature"),
    ("chat.", "not built: chat.history and chat.send cover the chat"),
    ("", GENERIC),
)


@functools.cache
def original_methods() -> frozenset[str]:
    """Every method the original's gateway advertises (read from the file beside this module the
    first time a method Homarus does not register is called: nothing is read otherwise)."""
    text = (Path(__file__).parent / "original_methods.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def not_supported_reason(method: str) -> str | None:
    """Why ``method`` is not answered, if the original has it (None for a name it does not have)."""
    if method not in original_methods() and method not in UNADVERTISED:
        return None
    return next(reason for prefix, reason in REASONS if method == prefix or method.startswith(prefix))
