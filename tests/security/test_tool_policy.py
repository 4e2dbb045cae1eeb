"""Tool policy tables: profiles, groups, allow/deny, provider, agent, subagent depth and HTTP."""

from __future__ import annotations

import pytest

from homarus.security.tool_policy import DEFAULT_HTTP_DENY, LayerSpec, PolicyInputs, ToolPolicy, normalize_tool_name

CORE = (
    "read",
    "write",
    "edit",
    "apply_patch",
    "exec",
    "process",
    "sessions_list",
    "sessions_history",
    "sessions_send",
    "sessions_spawn",
    "session_status",
    "memory_search",
    "memory_get",
    "web_search",
    "web_fetch",
    "cron",
    "gateway",
    "current_time",
    "my_plugin_tool",
)


def allowed(inputs: PolicyInputs, **kw: object) -> set[str]:
    policy = ToolPolicy(inputs, [t for t in CORE if t != "my_plugin_tool"])
    return set(policy.allowed(CORE, agent_id=str(kw.pop("agent_id", "main")), **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ("minimal", {"session_status"}),
        (
            "coding",
            {
                "read",
                "write",
                "edit",
                "apply_patch",
                "exec",
                "process",
                "sessions_list",
                "sessions_history",
                "sessions_send",
                "sessions_spawn",
                "session_status",
                "memory_search",
                "memory_get",
                "current_time",
            },
        ),
        ("messaging", {"sessions_list", "sessions_history", "sessions_send", "session_status"}),
        ("full", set(CORE)),
    ],
)
def test_profiles(profile: str, expected: set[str]) -> None:
    assert allowed(PolicyInputs(layers=(LayerSpec("tools", profile=profile),))) == expected


def test_no_policy_allows_everything() -> None:
    assert allowed(PolicyInputs()) == set(CORE)


def test_deny_wins_over_allow_and_groups_expand() -> None:
    inputs = PolicyInputs(layers=(LayerSpec("tools", allow=("group:fs", "exec"), deny=("write", "ed*")),))
    assert allowed(inputs) == {"read", "apply_patch", "exec"}


def test_globs_are_anchored_and_case_insensitive() -> None:
    inputs = PolicyInputs(layers=(LayerSpec("tools", deny=("SESSIONS_*",)),))
    got = allowed(inputs)
    assert "sessions_list" not in got and "session_status" in got  # "sessions_*" does not match "session_status"


def test_also_allow_extends_a_profile() -> None:
    inputs = PolicyInputs(layers=(LayerSpec("tools", profile="minimal", also_allow=("web_fetch",)),))
    assert allowed(inputs) == {"session_status", "web_fetch"}


def test_apply_patch_follows_exec_in_an_allow_list() -> None:
    assert allowed(PolicyInputs(layers=(LayerSpec("tools", allow=("exec",)),))) == {"exec", "apply_patch"}


def test_plugin_only_allow_list_is_stripped_with_a_warning() -> None:
    policy = ToolPolicy(PolicyInputs(layers=(LayerSpec("tools", allow=("my_plugin_tool",)),)), CORE[:-1])
    assert set(policy.allowed(CORE, agent_id="main")) == set(CORE)
    assert any("only plugin tools" in w for w in policy.warnings)


def test_layers_only_narrow_provider_then_agent() -> None:
    inputs = PolicyInputs(
        layers=(LayerSpec("tools", profile="coding"),),
        by_provider={"openai/gpt-x": LayerSpec("byProvider", deny=("exec",)), "openai": LayerSpec("p", deny=("read",))},
        agent_layers={"ops": (LayerSpec("agents.ops.tools", allow=("read", "exec", "web_fetch")),)},
    )
    assert "exec" not in allowed(inputs, provider="openai", model="gpt-x")
    assert "read" in allowed(inputs, provider="openai", model="gpt-x")  # provider/model key wins over provider
    assert "read" not in allowed(inputs, provider="openai", model="other")
    ops = allowed(inputs, agent_id="ops")
    assert ops == {"read", "exec", "apply_patch"}  # web_fetch stays out: an agent layer cannot widen the profile


@pytest.mark.parametrize(
    ("depth", "max_depth", "present", "absent"),
    [
        (1, 1, {"read", "exec"}, {"sessions_spawn", "sessions_list", "session_status", "sessions_send", "cron"}),
        (1, 2, {"sessions_spawn", "sessions_list"}, {"session_status", "sessions_send", "gateway"}),
        (2, 2, {"read"}, {"sessions_spawn", "sessions_history"}),
    ],
)
def test_subagent_depth(depth: int, max_depth: int, present: set[str], absent: set[str]) -> None:
    got = allowed(PolicyInputs(max_spawn_depth=max_depth), subagent_depth=depth)
    assert present <= got and not (absent & got)


def test_http_deny_list_and_gateway_overrides() -> None:
    base = allowed(PolicyInputs(), http=True)
    assert not ({"exec", "write", "apply_patch", "sessions_spawn", "cron", "gateway"} & base)
    assert {"read", "sessions_list", "current_time"} <= base
    tuned = allowed(PolicyInputs(http_allow=("sessions_send",), http_deny=("read",)), http=True)
    assert "sessions_send" in tuned and "read" not in tuned
    assert "exec" in DEFAULT_HTTP_DENY


def test_verdict_reasons_and_cache() -> None:
    policy = ToolPolicy(PolicyInputs(layers=(LayerSpec("tools", profile="minimal"),)), CORE)
    first = policy.verdicts(CORE, agent_id="main")
    assert first["read"].reason == "tools profile minimal does not allow it"
    assert policy.verdicts(CORE, agent_id="main") is first  # compiled once, cached per key


def test_names_are_normalised() -> None:
    assert normalize_tool_name(" Bash ") == "exec"
    assert normalize_tool_name("apply-patch") == "apply_patch"


def test_agent_provider_layer_is_step_six() -> None:
    inputs = PolicyInputs(
        agent_layers={"ops": (LayerSpec("agents.ops.tools", deny=("cron",)),)},
        agent_by_provider={"ops": {"anthropic": LayerSpec("agents.ops.tools.byProvider.anthropic", deny=("exec",))}},
    )
    assert "exec" not in allowed(inputs, agent_id="ops", provider="anthropic", model="claude")
    assert "exec" in allowed(inputs, agent_id="ops", provider="openai", model="gpt")
    assert "exec" in allowed(inputs, agent_id="main", provider="anthropic", model="claude")


def test_strangers_get_an_allowlist_nothing_unless_named() -> None:
    from homarus.security.tool_policy import stranger_tools

    every = {"read", "write", "exec", "process", "ls", "web_fetch", "web_search", "message", "browser"}
    every |= {"memory_search", "sessions_history", "time__get_current_time", "fs__read_file", "plugin_tool"}
    assert stranger_tools(every, None) == set()
    assert stranger_tools(every, ()) == set()
    assert stranger_tools(every, ["web_fetch", "group:memory"]) == {"web_fetch", "memory_search"}
    assert stranger_tools(every, ["mcp:time"]) == {"time__get_current_time"}
    assert stranger_tools(every, ["Bash"]) == {"exec"}  # aliases as everywhere else
    # alone in a sandbox: the sandbox's file and shell tools, still nothing else
    alone = stranger_tools(every, None, sandboxed_alone=True)
    assert alone == {"read", "write", "exec", "process", "ls"}
