"""The hook catalogue and its merge rules, exercised through HookRunner.modify/claim/sync."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from homarus.plugins import events as ev
from homarus.plugins.hookspecs import CONVERSATION_HOOKS, HOOKS, PROMPT_INJECTION_HOOKS, HookSpec, result_from
from homarus.plugins.runner import HookOutcome, HookRegistration, HookRunner

Handler = Callable[[Any, ev.HookContext], Any]


def returns(result: Any, log: list[str] | None = None, name: str = "") -> Handler:
    def handler(event: Any, ctx: ev.HookContext) -> Any:
        if log is not None:
            log.append(name or ctx.plugin_id)
        return result

    return handler


def runner_with(hook: str, *handlers: tuple[str, Handler], **kw: Any) -> HookRunner:
    """Handlers in descending priority: the first listed runs first (registered last to prove sorting)."""
    runner = HookRunner()
    n = len(handlers)
    for i in reversed(range(n)):
        plugin, handler = handlers[i]
        runner.add(HookRegistration(plugin, hook, handler, priority=n - i, **kw))
    return runner


async def modify(hook: str, event: Any, *handlers: tuple[str, Handler], tool_name: str | None = None) -> HookOutcome:
    return await runner_with(hook, *handlers).modify(hook, event, tool_name=tool_name)


def has_own_docstring(cls: type[Any]) -> bool:
    """@dataclass invents ``Name(field, ...)`` as a docstring when the class has none."""
    doc = cls.__doc__ or ""
    return bool(doc.strip()) and not doc.startswith(f"{cls.__name__}(")


# -- the catalogue ---------------------------------------------------------------------------------
def test_every_hook_has_documented_event_and_result_classes() -> None:
    for name, spec in HOOKS.items():
        assert spec.name == name
        assert dataclasses.is_dataclass(spec.event) and has_own_docstring(spec.event), name
        if spec.kind == "void":
            assert spec.result is None, name
        else:
            assert spec.result is not None, name
            assert dataclasses.is_dataclass(spec.result) and has_own_docstring(spec.result), name
            spec.result()  # every result has defaults: "no decision"


def test_every_event_dataclass_has_a_context_field() -> None:
    event_classes = [
        obj
        for name, obj in vars(ev).items()
        if inspect.isclass(obj)
        and name.endswith("Event")
        and obj.__module__.startswith(f"{ev.__name__}.")  # its phase modules
    ]
    for cls in event_classes:
        assert dataclasses.is_dataclass(cls)
        context = {f.name: f for f in dataclasses.fields(cls)}.get("context")
        assert context is not None, cls.__name__
        assert context.default_factory is ev.HookContext, cls.__name__
    assert {spec.event for spec in HOOKS.values()} <= set(event_classes)
    assert has_own_docstring(ev.HookContext) and has_own_docstring(ev.RequireApproval)


def test_every_exported_name_exists() -> None:
    for name in ev.__all__:
        assert hasattr(ev, name), name


def test_kinds_merge_rules_and_failure_policy_are_consistent() -> None:
    for name, spec in HOOKS.items():
        assert spec.kind in ("void", "mod", "gate", "claim", "sync"), name
        assert (spec.merge is not None) == (spec.kind in ("mod", "gate")), name
        assert spec.fail_closed == (spec.kind == "gate"), name
    assert {n for n, s in HOOKS.items() if s.fail_closed} == {"before_agent_run", "before_tool_call", "before_install"}
    assert {n for n, s in HOOKS.items() if s.tool_matcher} == {"before_tool_call", "after_tool_call"}
    assert HOOKS.keys() >= CONVERSATION_HOOKS | PROMPT_INJECTION_HOOKS
    assert HOOKS["before_agent_reply"].default_timeout_ms is None  # claim hooks: explicit timeouts only
    assert HOOKS["before_tool_call"].default_timeout_ms == 15_000
    assert HOOKS["agent_end"].default_timeout_ms == 30_000
    assert HOOKS["gateway_stop"].default_timeout_ms == 5_000


#: every mod/gate hook must have a merge-rule test in this file (a new hook fails until it has one)
MERGE_TESTED = {
    "before_model_resolve",
    "agent_turn_prepare",
    "heartbeat_prompt_contribution",
    "before_prompt_build",
    "before_agent_start",
    "before_agent_run",
    "before_tool_call",
    "resolve_exec_env",
    "message_sending",
    "reply_payload_sending",
    "before_agent_finalize",
    "before_install",
}


def test_every_modifying_hook_has_a_merge_test() -> None:
    assert {n for n, s in HOOKS.items() if s.kind in ("mod", "gate")} == MERGE_TESTED


def test_result_from() -> None:
    spec: HookSpec = HOOKS["message_sending"]
    assert result_from(spec, None) is None
    instance = ev.MessageSendingResult(content="x")
    assert result_from(spec, instance) is instance
    assert result_from(spec, {"content": "y", "cancel": False}) == ev.MessageSendingResult(content="y", cancel=False)
    with pytest.raises(ValueError, match=r"unknown result field\(s\) \['cancelReason'\] for message_sending"):
        result_from(spec, {"cancelReason": "camelCase"})
    with pytest.raises(ValueError, match="returned list, expected MessageSendingResult or dict"):
        result_from(spec, ["content"])
    with pytest.raises(ValueError, match="returned BeforeToolCallResult"):
        result_from(spec, ev.BeforeToolCallResult(block=True))
    assert result_from(HOOKS["agent_end"], {"anything": 1}) is None  # void hooks ignore results


# -- before_model_resolve --------------------------------------------------------------------------
async def test_before_model_resolve_first_defined_wins() -> None:
    outcome = await modify(
        "before_model_resolve",
        ev.BeforeModelResolveEvent("hi"),
        ("none", returns(None)),
        ("model_only", returns({"model_override": "m1"})),
        ("both", returns({"model_override": "m2", "provider_override": "p2"})),
        ("late", returns({"provider_override": "p3"})),
    )
    assert outcome.result == ev.BeforeModelResolveResult(model_override="m1", provider_override="p2")
    assert outcome.errors == [] and outcome.decided_by is None


# -- agent_turn_prepare ----------------------------------------------------------------------------
async def test_agent_turn_prepare_concatenates_in_priority_order() -> None:
    outcome = await modify(
        "agent_turn_prepare",
        ev.AgentTurnPrepareEvent("hi"),
        ("a", returns({"prepend_context": "A1", "append_context": "A2"})),
        ("empty", returns({"prepend_context": "", "append_context": None})),
        ("b", returns(ev.AgentTurnPrepareResult(prepend_context="B1"))),
        ("c", returns({"append_context": "C2"})),
    )
    assert outcome.result == ev.AgentTurnPrepareResult(prepend_context="A1\n\nB1", append_context="A2\n\nC2")


async def test_heartbeat_prompt_contribution_concatenates() -> None:
    outcome = await modify(
        "heartbeat_prompt_contribution",
        ev.HeartbeatPromptContributionEvent("agent:main:main", "main", "heartbeat"),
        ("a", returns({"prepend_context": "Check the backups."})),
        ("b", returns({"prepend_context": "Check the mail.", "append_context": "Be brief."})),
    )
    assert outcome.result == ev.AgentTurnPrepareResult(
        prepend_context="Check the backups.\n\nCheck the mail.", append_context="Be brief."
    )


# -- before_prompt_build ---------------------------------------------------------------------------
async def test_before_prompt_build_system_prompt_first_wins_and_contexts_concatenate() -> None:
    outcome = await modify(
        "before_prompt_build",
        ev.BeforePromptBuildEvent("hi"),
        ("a", returns({"system_prompt": "SA", "prepend_system_context": "PSA", "append_context": "ACA"})),
        ("b", returns({"system_prompt": "SB", "prepend_system_context": "PSB", "append_system_context": "ASB"})),
        ("c", returns({"prepend_context": "PCC", "append_context": "ACC", "append_system_context": "ASC"})),
    )
    r: ev.BeforePromptBuildResult = outcome.result
    assert r.system_prompt == "SA"
    assert r.prepend_system_context == "PSA\n\nPSB"
    assert r.append_system_context == "ASB\n\nASC"
    assert r.prepend_context == "PCC"
    assert r.append_context == "ACA\n\nACC"
    assert r.tools_allow is None


async def test_before_prompt_build_tools_allow_intersects_and_only_narrows() -> None:
    outcome = await modify(
        "before_prompt_build",
        ev.BeforePromptBuildEvent("hi"),
        ("a", returns({"tools_allow": ["read", "exec", "web_fetch"]})),
        ("silent", returns({"tools_allow": None})),
        ("b", returns({"tools_allow": ["web_fetch", "read", "write"]})),  # "write" cannot be added back
    )
    assert outcome.result.tools_allow == ["read", "web_fetch"]

    outcome = await modify(
        "before_prompt_build",
        ev.BeforePromptBuildEvent("hi"),
        ("none", returns({"tools_allow": []})),
        ("more", returns({"tools_allow": ["read"]})),
    )
    assert outcome.result.tools_allow == []  # [] = no optional tools, and nothing widens it again

    single = ["read"]
    outcome = await modify(
        "before_prompt_build", ev.BeforePromptBuildEvent("hi"), ("one", returns({"tools_allow": single}))
    )
    assert outcome.result.tools_allow == ["read"]
    assert outcome.result.tools_allow is not single  # a copy: the plugin's list is not shared


# -- before_agent_start (legacy) -------------------------------------------------------------------
async def test_before_agent_start_merges_prompt_and_model_fields() -> None:
    outcome = await modify(
        "before_agent_start",
        ev.BeforeAgentStartEvent("hi"),
        ("a", returns({"model_override": "m1", "prepend_context": "P1"})),
        (
            "b",
            returns({"model_override": "m2", "provider_override": "p2", "system_prompt": "S", "prepend_context": "P2"}),
        ),
        ("c", returns({"system_prompt": "S3", "append_context": "A3"})),
    )
    assert outcome.result == ev.BeforeAgentStartResult(
        model_override="m1", provider_override="p2", system_prompt="S", prepend_context="P1\n\nP2", append_context="A3"
    )


# -- before_agent_run (gate) -----------------------------------------------------------------------
async def test_before_agent_run_none_and_pass_mean_pass() -> None:
    assert (await modify("before_agent_run", ev.BeforeAgentRunEvent("hi"))).result.outcome == "pass"
    outcome = await modify(
        "before_agent_run",
        ev.BeforeAgentRunEvent("hi"),
        ("none", returns(None)),
        ("pass", returns({"outcome": "pass"})),
        ("dc", returns(ev.BeforeAgentRunResult())),
    )
    assert outcome.result.outcome == "pass" and outcome.decided_by is None and outcome.errors == []


@pytest.mark.parametrize("bad", [{"outcome": "allow"}, {"outcome": None}, {"outcome": "BLOCK"}, "pass", 1])
async def test_before_agent_run_an_invalid_decision_blocks(bad: Any) -> None:
    log: list[str] = []
    outcome = await modify(
        "before_agent_run",
        ev.BeforeAgentRunEvent("hi"),
        ("ok", returns(None, log)),
        ("weird", returns(bad, log)),
        ("never", returns(None, log)),
    )
    assert outcome.result.outcome == "block"
    assert "before_agent_run hook from weird failed" in (outcome.result.reason or "")
    assert outcome.decided_by == "weird"
    assert log == ["ok", "weird"]


async def test_before_agent_run_block_is_terminal() -> None:
    log: list[str] = []
    block = {"outcome": "block", "reason": "policy", "message": "[withheld]", "category": "pii", "metadata": {"n": 1}}
    outcome = await modify(
        "before_agent_run",
        ev.BeforeAgentRunEvent("secret"),
        ("pass", returns({"outcome": "pass"}, log)),
        ("blocker", returns(block, log)),
        ("never", returns({"outcome": "pass"}, log)),
    )
    assert outcome.result == ev.BeforeAgentRunResult("block", "policy", "[withheld]", "pii", {"n": 1})
    assert outcome.decided_by == "blocker"
    assert log == ["pass", "blocker"]


# -- before_tool_call (gate) -----------------------------------------------------------------------
def tool_event(params: dict[str, Any] | None = None, tool: str = "exec") -> ev.BeforeToolCallEvent:
    return ev.BeforeToolCallEvent(tool, params if params is not None else {"cmd": "ls"})


async def test_before_tool_call_block_is_sticky_and_terminal() -> None:
    log: list[str] = []
    outcome = await modify(
        "before_tool_call",
        tool_event(),
        ("nodecision", returns({"block": False, "block_reason": "early reason"}, log)),
        ("blocker", returns({"block": True}, log)),
        ("never", returns({"block": False, "params": {"cmd": "rm"}}, log)),
        tool_name="exec",
    )
    r: ev.BeforeToolCallResult = outcome.result
    assert r.block is True and r.block_reason == "early reason" and r.params is None
    assert outcome.decided_by == "blocker"
    assert log == ["nodecision", "blocker"]


async def test_before_tool_call_block_false_is_no_decision() -> None:
    outcome = await modify("before_tool_call", tool_event(), ("a", returns({"block": False})), ("b", returns(None)))
    assert not outcome.result.block and outcome.decided_by is None


async def test_before_tool_call_params_last_defined_and_chained() -> None:
    seen: list[dict[str, Any]] = []

    def rewrite(params: dict[str, Any] | None) -> Handler:
        def handler(event: ev.BeforeToolCallEvent, ctx: ev.HookContext) -> Any:
            seen.append(dict(event.params))
            return None if params is None else {"params": params}

        return handler

    event = tool_event({"cmd": "ls"})
    outcome = await modify(
        "before_tool_call",
        event,
        ("a", rewrite({"cmd": "ls -l"})),
        ("b", rewrite(None)),
        ("c", rewrite({"cmd": "ls -la"})),
        ("d", rewrite(None)),
    )
    assert outcome.result.params == {"cmd": "ls -la"}
    assert seen == [{"cmd": "ls"}, {"cmd": "ls -l"}, {"cmd": "ls -l"}, {"cmd": "ls -la"}]
    assert event.params == {"cmd": "ls"}


async def test_before_tool_call_block_reason_last_defined() -> None:
    outcome = await modify(
        "before_tool_call",
        tool_event(),
        ("a", returns({"block_reason": "first"})),
        ("b", returns({"block_reason": "second"})),
        ("c", returns({"block": True})),
    )
    assert outcome.result.block is True and outcome.result.block_reason == "second"


async def test_before_tool_call_require_approval_first_wins_stamped_and_freezes_params() -> None:
    log: list[str] = []
    outcome = await modify(
        "before_tool_call",
        tool_event(),
        (
            "asker",
            returns({"params": {"cmd": "ls -l"}, "require_approval": {"title": "T1", "severity": "critical"}}, log),
        ),
        ("second", returns({"require_approval": ev.RequireApproval(title="T2"), "params": {"cmd": "rm -rf /"}}, log)),
        ("third", returns({"params": {"cmd": "other"}}, log)),
    )
    r: ev.BeforeToolCallResult = outcome.result
    assert r.require_approval == ev.RequireApproval(title="T1", severity="critical", plugin_id="asker")
    assert r.params == {"cmd": "ls -l"}  # frozen once approval was asked for
    assert not r.block and outcome.decided_by is None
    assert log == ["asker", "second", "third"]  # approval is not terminal


async def test_before_tool_call_require_approval_dataclass_is_stamped_without_touching_the_plugins_object() -> None:
    mine = ev.RequireApproval(title="Mine", plugin_id="spoofed")
    outcome = await modify("before_tool_call", tool_event(), ("real", returns({"require_approval": mine})))
    assert outcome.result.require_approval == ev.RequireApproval(title="Mine", plugin_id="real")
    assert mine.plugin_id == "spoofed"


async def test_before_tool_call_a_later_block_still_blocks_after_approval_was_asked() -> None:
    outcome = await modify(
        "before_tool_call",
        tool_event(),
        ("asker", returns({"require_approval": {"title": "T"}})),
        ("blocker", returns({"block": True, "block_reason": "no"})),
    )
    assert outcome.result.block is True and outcome.result.block_reason == "no"
    assert outcome.decided_by == "blocker"


async def test_before_tool_call_malformed_require_approval_blocks() -> None:
    outcome = await modify("before_tool_call", tool_event(), ("bad", returns({"require_approval": {"titel": "typo"}})))
    assert outcome.result.block is True
    assert "before_tool_call hook from bad" in (outcome.result.block_reason or "")


async def test_before_tool_call_matcher_filters_by_tool_name() -> None:
    runner = HookRunner()
    log: list[str] = []
    runner.add(
        HookRegistration("exec_guard", "before_tool_call", returns({"block": True}, log), matcher=frozenset({"exec"}))
    )
    runner.add(HookRegistration("all", "before_tool_call", returns(None, log)))
    read = await runner.modify("before_tool_call", tool_event(tool="read"), tool_name="read")
    assert not read.result.block and log == ["all"]
    exec_ = await runner.modify("before_tool_call", tool_event(tool="exec"), tool_name="exec")
    assert exec_.result.block is True and exec_.decided_by == "exec_guard"
    assert log == ["all", "exec_guard"]


# -- resolve_exec_env ------------------------------------------------------------------------------
async def test_resolve_exec_env_later_overrides_and_dangerous_keys_are_dropped() -> None:
    dangerous = [
        "PATH",
        "Path",
        "LD_PRELOAD",
        "ld_library_path",
        "DYLD_INSERT_LIBRARIES",
        "NODE_OPTIONS",
        "HTTP_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "NO_PROXY",
        "FTP_PROXY",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_TLS_REJECT_UNAUTHORIZED",
        "NODE_EXTRA_CA_CERTS",
    ]
    invalid = ["1ABC", "A-B", "A=B", "", "WITH SPACE", "ÜMLAUT", "A\nB"]
    second: dict[str, Any] = {"FOO": "2", "_UNDER": "u", "LANG": "C", "NUM": 3}  # a non-str value is dropped
    first = {"FOO": "1", "KEEP": "k", **dict.fromkeys(dangerous, "x"), **dict.fromkeys(invalid, "x")}
    outcome = await modify(
        "resolve_exec_env",
        ev.ResolveExecEnvEvent("agent:main:main"),
        ("a", returns({"env": first})),
        ("none", returns(None)),
        ("b", returns(ev.ResolveExecEnvResult(second))),
    )
    assert outcome.result.env == {"FOO": "2", "KEEP": "k", "_UNDER": "u", "LANG": "C"}
    assert outcome.errors == []


# -- message_sending -------------------------------------------------------------------------------
async def test_message_sending_content_is_chained_and_last_defined_wins() -> None:
    seen: list[str] = []

    def shout(event: ev.MessageSendingEvent, ctx: ev.HookContext) -> dict[str, Any]:
        seen.append(event.content)
        return {"content": event.content.upper(), "metadata": {"shout": True}}

    def exclaim(event: ev.MessageSendingEvent, ctx: ev.HookContext) -> dict[str, Any]:
        seen.append(event.content)
        return {"content": event.content + "!", "metadata": {"exclaim": True}}

    def observe(event: ev.MessageSendingEvent, ctx: ev.HookContext) -> None:
        seen.append(event.content)

    event = ev.MessageSendingEvent("user", "hello")
    outcome = await modify(
        "message_sending",
        event,
        ("shout", shout),
        ("noop", returns({"cancel": False})),
        ("exclaim", exclaim),
        ("obs", observe),
    )
    assert outcome.result.content == "HELLO!"
    assert outcome.result.metadata == {"shout": True, "exclaim": True}
    assert not outcome.result.cancel and outcome.decided_by is None
    assert seen == ["hello", "HELLO", "HELLO!"]
    assert event.content == "hello"


async def test_message_sending_cancel_is_terminal() -> None:
    log: list[str] = []
    outcome = await modify(
        "message_sending",
        ev.MessageSendingEvent("user", "hello"),
        ("rewrite", returns({"content": "hi"}, log)),
        ("cancel", returns({"cancel": True, "cancel_reason": "quiet hours"}, log)),
        ("never", returns({"content": "never"}, log)),
    )
    r: ev.MessageSendingResult = outcome.result
    assert r.cancel is True and r.cancel_reason == "quiet hours" and r.content == "hi"
    assert outcome.decided_by == "cancel"
    assert log == ["rewrite", "cancel"]


# -- reply_payload_sending -------------------------------------------------------------------------
async def test_reply_payload_sending_payload_is_chained_and_cancel_is_terminal() -> None:
    seen: list[dict[str, Any]] = []

    def add_field(key: str) -> Handler:
        def handler(event: ev.ReplyPayloadSendingEvent, ctx: ev.HookContext) -> dict[str, Any]:
            seen.append(event.payload)
            return {"payload": {**event.payload, key: True}}

        return handler

    original = {"text": "hi"}
    outcome = await modify(
        "reply_payload_sending",
        ev.ReplyPayloadSendingEvent(original),
        ("a", add_field("a")),
        ("none", returns(None)),
        ("b", add_field("b")),
    )
    assert outcome.result.payload == {"text": "hi", "a": True, "b": True}
    assert seen == [{"text": "hi"}, {"text": "hi", "a": True}]
    assert original == {"text": "hi"}

    log: list[str] = []
    outcome = await modify(
        "reply_payload_sending",
        ev.ReplyPayloadSendingEvent(original),
        ("stop", returns({"cancel": True, "reason": "spam"}, log)),
        ("never", returns({"payload": {}}, log)),
    )
    assert outcome.result == ev.ReplyPayloadSendingResult(None, True, "spam")
    assert outcome.decided_by == "stop" and log == ["stop"]


# -- before_agent_finalize -------------------------------------------------------------------------
async def test_before_agent_finalize_revise_reasons_concatenate_and_first_retry_is_kept() -> None:
    outcome = await modify(
        "before_agent_finalize",
        ev.BeforeAgentFinalizeEvent("r", "s", "answer"),
        ("r1", returns({"action": "revise", "reason": "too short", "retry": {"instruction": "longer"}})),
        ("cont", returns({"action": "continue", "reason": "ignored"})),
        ("r2", returns({"action": "revise", "reason": "no sources", "retry": {"instruction": "cite"}})),
    )
    assert outcome.result == ev.BeforeAgentFinalizeResult(
        "revise", "too short\n\nno sources", {"instruction": "longer"}
    )
    assert outcome.decided_by is None


async def test_before_agent_finalize_finalize_is_sticky() -> None:
    log: list[str] = []
    outcome = await modify(
        "before_agent_finalize",
        ev.BeforeAgentFinalizeEvent("r", "s", "answer"),
        ("revise", returns({"action": "revise", "reason": "hmm"}, log)),
        ("final", returns({"action": "finalize"}, log)),
        ("never", returns({"action": "revise", "reason": "late"}, log)),
    )
    assert outcome.result.action == "finalize"
    assert outcome.decided_by == "final"
    assert log == ["revise", "final"]


async def test_before_agent_finalize_an_invalid_action_is_skipped_fail_open() -> None:
    outcome = await modify(
        "before_agent_finalize",
        ev.BeforeAgentFinalizeEvent("r", "s", "answer"),
        ("bad", returns({"action": "explode", "reason": "x"})),
        ("ok", returns({"action": "revise", "reason": "fine"})),
    )
    assert outcome.result == ev.BeforeAgentFinalizeResult("revise", "fine", None)
    assert len(outcome.errors) == 1 and outcome.errors[0].startswith("bad: ") and "explode" in outcome.errors[0]
    assert outcome.decided_by is None

    only_bad = await modify(
        "before_agent_finalize", ev.BeforeAgentFinalizeEvent("r", "s", "a"), ("bad", returns({"action": "nope"}))
    )
    assert only_bad.result == ev.BeforeAgentFinalizeResult()  # the original answer stands


# -- before_install (gate) -------------------------------------------------------------------------
async def test_before_install_findings_concatenate_and_block_is_terminal() -> None:
    log: list[str] = []
    install = ev.BeforeInstallEvent("plugin", "p", "/tmp/p")
    outcome = await modify(
        "before_install",
        install,
        ("scan1", returns({"findings": [{"id": 1}], "reason": "first"}, log)),
        ("scan2", returns({"findings": [{"id": 2}, {"id": 3}], "reason": "second"}, log)),
        ("block", returns({"block": True, "findings": [{"id": 4}]}, log)),
        ("never", returns({"findings": [{"id": 5}]}, log)),
    )
    r: ev.BeforeInstallResult = outcome.result
    assert r.block is True and r.reason == "first"
    assert r.findings == [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}]
    assert outcome.decided_by == "block"
    assert log == ["scan1", "scan2", "block"]

    clean = await modify("before_install", install, ("a", returns({"findings": [{"id": 1}]})), ("b", returns(None)))
    assert clean.result == ev.BeforeInstallResult(None, [{"id": 1}], None) and clean.decided_by is None


async def test_before_install_fails_closed_on_error() -> None:
    def boom(event: Any, ctx: ev.HookContext) -> None:
        raise OSError("scanner crashed")

    outcome = await modify(
        "before_install",
        ev.BeforeInstallEvent("skill", "s", "/tmp/s"),
        ("scan", returns({"findings": [{"id": 1}]})),
        ("crash", boom),
        ("never", returns(None)),
    )
    assert outcome.result.block is True
    assert outcome.result.reason == "blocked because before_install hook from crash failed: scanner crashed"
    assert outcome.decided_by == "crash"


# -- claim and sync kinds --------------------------------------------------------------------------
async def test_claim_hooks_stop_at_the_first_handled() -> None:
    claims = [n for n, s in HOOKS.items() if s.kind == "claim"]
    assert claims == ["inbound_claim", "before_agent_reply"]
    log: list[str] = []
    runner = runner_with(
        "before_agent_reply",
        ("pass", returns({"handled": False}, log)),
        ("first", returns({"handled": True, "reply": None, "reason": "silence"}, log)),
        ("second", returns({"handled": True, "reply": "no"}, log)),
    )
    result, plugin = await runner.claim("before_agent_reply", ev.BeforeAgentReplyEvent("hi"))
    assert (result, plugin) == (ev.BeforeAgentReplyResult(True, None, "silence"), "first")
    assert log == ["pass", "first"]


def test_sync_hooks_chain_their_field() -> None:
    assert sorted(n for n, s in HOOKS.items() if s.kind == "sync") == ["before_message_write", "tool_result_persist"]
    runner = runner_with(
        "before_message_write",
        ("a", returns({"message": {"n": 1}})),
        ("b", lambda event, ctx: {"message": {"n": event.message["n"] + 1}}),
    )
    assert runner.sync("before_message_write", ev.BeforeMessageWriteEvent({"n": 0})) == ev.BeforeMessageWriteResult(
        None, {"n": 2}
    )
