"""The core gateway methods, one module per family, registered from this table.

Each row names a method, the scope it needs and where its handler and params model live
(``module:function`` inside this package). The registry knows every name and scope from the
table alone, so ``hello-ok`` can advertise them and a call can be authorised without importing
anything; a family's module is imported the first time one of its methods is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from homarus.gateway.router import LazyMethod
from homarus.security.scopes import ADMIN, APPROVALS, PAIRING, READ, WRITE

if TYPE_CHECKING:
    from homarus.gateway.router import MethodRegistry

__all__ = ["CORE_METHODS", "register_core_methods"]

_M = LazyMethod
_C = "homarus.gateway.methods.control_ui:"
_V = "homarus.gateway.methods.ui_views:"
_P = __name__ + "."

CORE_METHODS: Final[tuple[LazyMethod, ...]] = (
    _M("health", _P + "health:health", None, "HealthParams"),
    _M("system-presence", _P + "health:system_presence", READ),
    _M("status", _P + "status:status", READ, "StatusParams"),
    _M("config.get", _P + "config:config_get", READ),
    _M("config.schema", _P + "config:config_schema", READ),
    _M("config.schema.lookup", _P + "config:config_schema_lookup", READ, "SchemaLookupParams"),
    _M("config.set", _P + "config:config_set", ADMIN, "ConfigWriteParams"),
    _M("config.apply", _P + "config:config_apply", ADMIN, "ConfigApplyParams"),
    _M("config.patch", _P + "config:config_patch", ADMIN, "ConfigPatchParams"),
    _M("connect", _P + "config:second_connect", ADMIN, "AnyParams", advertised=False),
    _M("sessions.list", _P + "sessions:sessions_list", READ, "ListParams"),
    _M("sessions.get", _P + "sessions:sessions_get", READ, "GetParams", advertised=False),
    _M("sessions.preview", _P + "sessions:sessions_preview", READ, "PreviewParams"),
    _M("sessions.resolve", _P + "sessions:sessions_resolve", READ, "ResolveParams", advertised=False),
    _M("sessions.subscribe", _P + "sessions:sessions_subscribe", READ),
    _M("sessions.unsubscribe", _P + "sessions:sessions_unsubscribe", READ),
    _M("sessions.create", _P + "sessions:sessions_create", WRITE, "CreateParams"),
    # operator.write for the fields a client UI sets, operator.admin for the rest (in the handler)
    _M("sessions.patch", _P + "sessions:sessions_patch", WRITE, "SessionPatch"),
    _M("sessions.compact", _P + "sessions:sessions_compact", ADMIN, "CompactParams"),
    _M("sessions.reset", _P + "sessions:sessions_reset", ADMIN, "ResetParams"),
    _M("sessions.delete", _P + "sessions:sessions_delete", ADMIN, "DeleteParams"),
    _M("agent", _P + "agent:agent", WRITE, "AgentParams"),
    _M("agent.wait", _P + "agent:agent_wait", WRITE, "WaitParams"),
    _M("chat.send", _P + "chat:chat_send", WRITE, "ChatSendParams"),
    _M("chat.history", _P + "chat_history:chat_history", READ, "HistoryParams"),
    _M("chat.abort", _P + "chat:chat_abort", WRITE, "AbortParams"),
    _M("sessions.abort", _P + "chat:sessions_abort", WRITE, "SessionAbortParams"),
    _M("chat.inject", _P + "chat:chat_inject", ADMIN, "InjectParams", advertised=False),
    _M("plugins.list", _P + "plugins:plugins_list", READ),
    _M("tools.catalog", _P + "tools:tools_catalog", READ, "CatalogParams"),
    _M("tools.effective", _P + "tools:tools_effective", READ, "EffectiveParams"),
    _M("wake", _P + "heartbeat:wake", WRITE, "WakeParams"),
    _M("system-event", _P + "heartbeat:system_event", ADMIN, "SystemEventParams"),
    _M("last-heartbeat", _P + "heartbeat:last_heartbeat", READ),
    _M("set-heartbeats", _P + "heartbeat:set_heartbeats", ADMIN, "SetHeartbeatsParams"),
    _M("logs.tail", _P + "logs:logs_tail", READ, "TailParams"),
    _M("cron.status", _P + "cron:cron_status", READ),
    _M("cron.get", _P + "cron:cron_get", READ, "GetParams"),
    _M("cron.list", _P + "cron:cron_list", READ, "ListParams"),
    _M("cron.runs", _P + "cron:cron_runs", READ, "RunsParams"),
    _M("cron.add", _P + "cron:cron_add", ADMIN, "AddParams"),
    _M("cron.update", _P + "cron:cron_update", ADMIN, "UpdateParams"),
    _M("cron.remove", _P + "cron:cron_remove", ADMIN, "RemoveParams"),
    _M("cron.run", _P + "cron:cron_run", ADMIN, "RunParams"),
    _M("skills.status", _P + "skills:skills_status", READ, "StatusParams"),
    _M("skills.detail", _P + "skills:skills_detail", READ, "DetailParams"),
    _M("skills.install", _P + "skills:skills_install", ADMIN, "InstallParams"),
    _M("skills.update", _P + "skills:skills_update", ADMIN, "UpdateParams"),
    _M("memory.status", _P + "memory:memory_status", READ, "StatusParams"),
    _M("memory.search", _P + "memory:memory_search", READ, "SearchParams"),
    _M("plugin.approval.request", _P + "approvals:approval_request", APPROVALS, "RequestParams"),
    _M("plugin.approval.waitDecision", _P + "approvals:approval_wait", APPROVALS, "IdParams"),
    _M("plugin.approval.list", _P + "approvals:approval_list", APPROVALS),
    _M("plugin.approval.resolve", _P + "approvals:approval_resolve", APPROVALS, "ResolveParams"),
    _M("exec.approval.request", _P + "exec_approvals:approval_request", APPROVALS, "RequestParams"),
    _M("exec.approval.get", _P + "exec_approvals:approval_get", APPROVALS, "IdParams"),
    _M("exec.approval.list", _P + "exec_approvals:approval_list", APPROVALS),
    _M("exec.approval.waitDecision", _P + "exec_approvals:approval_wait", APPROVALS, "WaitParams"),
    _M("exec.approval.resolve", _P + "exec_approvals:approval_resolve", APPROVALS, "ExecResolveParams"),
    _M("channels.status", _P + "channels:channels_status", READ, "StatusParams"),
    _M("channels.start", _P + "channels:channels_start", ADMIN, "AccountParams"),
    _M("channels.stop", _P + "channels:channels_stop", ADMIN, "AccountParams"),
    _M("channels.logout", _P + "channels:channels_logout", ADMIN, "AccountParams"),
    _M("channels.pairing.list", _P + "channels:pairing_list", PAIRING, "PairingListParams"),
    # operator.pairing, plus operator.admin with bootstrapCommandOwner (checked in the handler)
    _M("channels.pairing.approve", _P + "channels:pairing_approve", PAIRING, "PairingApproveParams"),
    _M("channels.pairing.dismiss", _P + "channels:pairing_dismiss", PAIRING, "PairingDismissParams"),
    _M("channels.outbox.list", _P + "channels:outbox_list", READ, "OutboxListParams", advertised=False),
    _M("channels.outbox.replay", _P + "channels:outbox_replay", ADMIN, "OutboxItemParams", advertised=False),
    _M("channels.outbox.drop", _P + "channels:outbox_drop", ADMIN, "OutboxItemParams", advertised=False),
    _M("send", _P + "channels:send", WRITE, "SendParams"),
    _M("message.action", _P + "message_action:message_action", WRITE, "MessageActionParams"),
    _M("web.login.start", _P + "web_login:web_login_start", ADMIN, "WebLoginStartParams", advertised=False),
    _M("web.login.wait", _P + "web_login:web_login_wait", ADMIN, "WebLoginWaitParams", advertised=False),
    _M("mcp.status", _P + "mcp:mcp_status", READ),
    _M("usage.status", _P + "usage:usage_status", READ),
    _M("commands.list", _P + "commands:commands_list", READ, "ListParams"),
    _M("hooks.status", _P + "hooks:hooks_status", READ, "StatusParams"),
    _M("audit.activity.list", _P + "audit:activity_list", READ, "ActivityParams"),
    _M("diagnostics.stability", _P + "audit:diagnostics_stability", READ, "StabilityParams"),
    _M("secrets.reload", _P + "config:secrets_reload", ADMIN, "EmptyParams"),
    _M("browser.request", _P + "browser:browser_request", ADMIN, "RequestParams"),
    _M("users.list", _C + "users_list", READ),
    _M("usage.cost", _P + "usage:usage_cost", READ, "CostParams"),
    _M("sessions.usage", _P + "usage:sessions_usage_", READ, "SessionsParams"),
    _M("models.list", _P + "models:models_list", READ, "ListParams"),
    _M("node.list", _P + "nodes:node_list", READ),
    _M("node.describe", _P + "nodes:node_describe", READ, "DescribeParams"),
    _M("node.pair.list", _P + "nodes:node_pair_list", PAIRING),
    _M("exec.approvals.get", _P + "exec_approvals:approvals_get", ADMIN),
    _M("exec.approval.grants.list", _P + "exec_approvals:grants_list", APPROVALS, "GrantsListParams"),
    _M("exec.approval.grants.revoke", _P + "exec_approvals:grant_revoke", APPROVALS, "GrantRevokeParams"),
    # the original's Control UI (methods/control_ui.py: Homarus's data, or the empty shape of a
    # feature Homarus does not have; docs/openclaw-compat.md)
    _M("agents.list", _C + "agents_list", READ),
    _M("agent.identity.get", _C + "agent_identity_get", READ, "SessionParams"),
    _M("models.authStatus", _C + "models_auth_status", READ, "AuthStatusParams"),
    _M("sessions.describe", _C + "sessions_describe", READ, "DescribeParams"),
    _M("chat.startup", _C + "chat_startup", READ, "StartupParams"),
    _M("chat.metadata", _C + "chat_metadata", READ, "MetadataParams"),
    _M("sessions.messages.subscribe", _C + "messages_subscribe", READ, "SubscribeParams"),
    _M("sessions.messages.unsubscribe", _C + "messages_unsubscribe", READ, "SubscribeParams"),
    _M("sessions.observer.visibility", _C + "observer_visibility", READ, "VisibilityParams"),
    _M("update.status", _C + "update_status", READ, "UpdateStatusParams"),
    _M("projects.list", _C + "projects_list", READ, "ProjectsParams"),
    _M("system.info", _C + "system_info", READ),
    _M("openclaw.approval.list", _C + "empty_list", APPROVALS),
    _M("question.list", _C + "question_list", READ),
    _M("talk.catalog", _C + "talk_catalog", READ, "TalkParams"),
    _M("progressCard.get", _C + "progress_card", READ, "SessionParams"),
    _M("sessions.branches.list", _C + "branches_list", READ, "SessionParams"),
    _M("sessions.companion.state", _C + "companion_state", READ, "SessionParams"),
    _M("tasks.list", _C + "tasks_list", READ, "TasksParams"),
    _M("board.get", _C + "board_get", READ, "SessionParams"),
    _M("plugins.controlUi.list", _C + "plugins_control_ui", READ),
    _M("plugin.surface.refresh", _C + "surface_refresh", READ, "SurfaceParams"),
    _M("controlUi.sessionPullRequests.subscribe", _C + "pull_requests_subscribe", READ, "KeysParams"),
    _M("sessions.viewers.set", _C + "viewers_set", READ, "KeysParams"),
    _M("sessions.github.options", _C + "github_options", READ, "GitHubParams"),
    _M("session.members.listEvidence", _C + "members_evidence", READ, "SessionParams"),
    _M("users.prefs.get", _C + "prefs_get", READ, "PrefsParams"),
    _M("sessions.groups.list", _C + "groups_list", READ),
    _M("sessions.groups.defaults", _C + "groups_defaults", READ),
    _M("mentions.list", _C + "mentions_list", READ),
    _M("taskSuggestions.list", _C + "suggestions_list", READ, "SuggestionsParams"),
    _M("session.discussion.info", _C + "discussion_info", READ, "SessionParams"),
    _M("sessions.catalog.list", _C + "catalog_list", READ, "CatalogParams"),
    _M("environments.list", _C + "environments_list", READ, "EnvironmentsParams"),
    _M("plugins.catalog.browse", _C + "plugins_catalog_browse", READ, "BrowseParams"),
    _M("themes.list", _V + "themes_list", READ),
    _M("tools.github.status", _V + "github_status", READ, "GitHubParams"),
    _M("approval.history", _V + "approval_history", APPROVALS, "HistoryParams"),
    _M("doctor.memory.status", _V + "memory_doctor_status", READ, "AgentParams"),
    _M("webSearch.status", _V + "web_search_status", READ, "WebSearchParams"),
    _M("migrations.memory.plan", _V + "memory_migration_plan", ADMIN, "MigrationParams"),
    _M("worktrees.list", _V + "worktrees_list", READ),
    _M("transcripts.list", _V + "transcripts_list", READ, "TranscriptsParams"),
    _M("skills.library.list", _V + "skills_library", READ, "LibraryParams"),
    _M("skills.curator.status", _V + "skills_curator", READ, "EmptyParams"),
    _M("skills.proposals.list", _V + "skills_proposals", READ, "AgentParams"),
    _M("skills.search", _V + "skills_search", READ, "SearchParams"),
    _M("diagnostics.lanes", _V + "diagnostics_lanes", READ),
    _M("artifacts.list", _V + "artifacts_list", READ, "ArtifactsParams"),
    _M("device.pair.list", _P + "devices:pair_list", PAIRING),
    _M("device.pair.approve", _P + "devices:pair_approve", PAIRING, "RequestParams"),
    _M("device.pair.reject", _P + "devices:pair_reject", PAIRING, "RequestParams"),
    _M("device.pair.remove", _P + "devices:pair_remove", PAIRING, "DeviceParams"),
    _M("device.pair.rename", _P + "devices:pair_rename", PAIRING, "RenameParams"),
    _M("device.token.rotate", _P + "devices:token_rotate", PAIRING, "TokenParams"),
    _M("device.token.revoke", _P + "devices:token_revoke", PAIRING, "TokenParams"),
)


def register_core_methods(methods: MethodRegistry) -> None:
    for method in CORE_METHODS:
        methods.register_lazy(method)
