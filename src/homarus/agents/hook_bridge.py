"""Binds the loop's extension points and the run's phases to the plugin hook runner.

Void hooks are fired in the background (they never delay a run); modifying and gate hooks are
awaited. ``before_tool_call`` is fail-closed and can pause the run for an operator's approval.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from homarus.agents.loop import LoopHooks
from homarus.audit.trail import RunAudit
from homarus.messages import AssistantMessage, Context, ToolCall, ToolResultMessage, UserMessage
from homarus.plugins import events as ev
from homarus.plugins.runner import HookRunner
from homarus.providers.registry import ResolvedModel
from homarus.usage.ledger import ModelTally, add_call

__all__ = ["ApprovalFn", "RuntimeHooks"]

#: (request payload, timeout ms, abort) → "allow-once" | "allow-always" | "deny" | None (timed out)
ApprovalFn = Callable[[dict[str, Any], int, asyncio.Event], Awaitable[str | None]]
Spawn = Callable[[Coroutine[Any, Any, Any]], Any]

MAX_FINALIZE_REVISIONS = 2


class RuntimeHooks(LoopHooks):
    def __init__(
        self,
        runner: HookRunner,
        ctx: ev.HookContext,
        spawn: Spawn,
        *,
        abort: asyncio.Event,
        approve: ApprovalFn | None = None,
        audit: RunAudit | None = None,
        usage: dict[tuple[str, str], ModelTally] | None = None,
    ) -> None:
        self.audit = audit
        self.usage = usage
        self.runner = runner
        self.ctx = ctx
        self.spawn = spawn
        self.abort = abort
        self.approve = approve
        self.revisions = 0

    def fire(self, hook: str, event: Callable[[], Any], *, tool_name: str | None = None) -> None:
        """Run a void hook in the background, if anyone listens: ``event`` builds its event then (a
        run whose plugins listen to nothing builds none, nor loads their types)."""
        if self.runner.has(hook):
            self.spawn(self.runner.void(hook, event(), tool_name=tool_name))

    # -- tools ------------------------------------------------------------------------------------
    async def before_tool(self, call: ToolCall) -> ToolCall | str:
        if not self.runner.has("before_tool_call"):
            return call
        ctx = dataclasses.replace(self.ctx, tool_call_id=call.id)
        event = ev.BeforeToolCallEvent(call.name, dict(call.arguments), self.ctx.run_id, call.id, context=ctx)
        outcome = await self.runner.modify("before_tool_call", event, tool_name=call.name)
        result: ev.BeforeToolCallResult = outcome.result
        if result.block:
            by = f" by {outcome.decided_by}" if outcome.decided_by else ""
            reason = result.block_reason or f"Tool call blocked{by}"
            if self.audit is not None:
                self.audit.decided(call.id, "blocked:hook", by=outcome.decided_by, reason=reason)
            return reason
        args = {**call.arguments, **(result.params or {})}
        approval = result.require_approval
        if isinstance(approval, ev.RequireApproval):
            verdict = await self._ask(approval, call)
            if self.audit is not None:
                decision = "approved" if verdict is None else "blocked:approval"
                self.audit.decided(call.id, decision, by=approval.plugin_id, reason=verdict)
            if verdict is not None:
                return verdict
        if result.params is not None:
            return dataclasses.replace(call, arguments=args)
        return call

    async def _ask(self, approval: ev.RequireApproval, call: ToolCall) -> str | None:
        """None when an operator allowed the call, else the reason it is blocked."""
        if self.approve is None:
            return "Tool call needs an approval, but no approval route is available"
        # the tool's arguments stay out of the request: operators see what and who, not the data
        payload = {
            "pluginId": approval.plugin_id,
            "title": approval.title[:80] or "Approval required",
            "description": approval.description[:256],
            "severity": approval.severity,
            "toolName": call.name,
            "toolCallId": call.id,
            "agentId": self.ctx.agent_id,
            "sessionKey": self.ctx.session_key,
        }
        try:
            decision = await self.approve(payload, approval.timeout_ms, self.abort)
        except Exception as exc:  # the approval system failed: fail closed
            return f"Tool call blocked: approval failed ({exc})"
        if self.abort.is_set():
            return "Approval cancelled (run aborted)"
        if decision in ("allow-once", "allow-always"):
            return None
        return "Denied by user" if decision == "deny" else "Approval timed out; the tool call was denied"

    def tool_refused(self, call: ToolCall, reason: str) -> None:
        if self.audit is not None:
            self.audit.decided(call.id, reason)

    def after_tool(self, call: ToolCall, result: ToolResultMessage, duration_ms: int) -> None:
        if self.audit is not None:
            self.audit.tool_call(
                tool_call_id=call.id,
                tool=call.name,
                args=call.arguments,
                is_error=result.is_error,
                duration_ms=duration_ms,
                details=result.details,
                error_text=result.text if result.is_error else None,
            )
        if not self.runner.has("after_tool_call"):
            return
        ctx = dataclasses.replace(self.ctx, tool_call_id=call.id)
        self.fire(
            "after_tool_call",
            lambda: ev.AfterToolCallEvent(
                call.name,
                dict(call.arguments),
                self.ctx.run_id,
                call.id,
                result=None if result.is_error else result.text,
                error=result.text if result.is_error else None,
                duration_ms=duration_ms,
                context=ctx,
            ),
            tool_name=call.name,
        )

    # -- model calls ------------------------------------------------------------------------------------
    def model_call_started(self, call_id: str, model: ResolvedModel, context: Context) -> None:
        run_id = self.ctx.run_id or ""
        info = model.info
        self.fire(
            "model_call_started",
            lambda: ev.ModelCallStartedEvent(run_id, call_id, info.provider, info.id, info.api, context=self.ctx),
        )
        if self.runner.has("llm_input"):
            last = next((m for m in reversed(context.messages) if isinstance(m, UserMessage)), None)
            self.fire(
                "llm_input",
                lambda: ev.LlmInputEvent(
                    run_id,
                    self.ctx.session_id,
                    info.provider,
                    info.id,
                    context.system_prompt,
                    last.text if last else "",
                    [m.to_json() for m in context.messages],
                    context=self.ctx,
                ),
            )

    def model_call_ended(self, call_id: str, model: ResolvedModel, message: AssistantMessage, ms: int) -> None:
        run_id = self.ctx.run_id or ""
        info = model.info
        failed = message.stop_reason in ("error", "aborted")
        if self.usage is not None:
            add_call(self.usage, info.provider, info.id, message.usage, priced=any(info.cost))
        if self.audit is not None:
            self.audit.model_call(
                provider=info.provider,
                model=info.id,
                duration_ms=ms,
                stop_reason=message.stop_reason,
                usage=message.usage.to_json(),
            )
        self.fire(
            "model_call_ended",
            lambda: ev.ModelCallEndedEvent(
                run_id,
                call_id,
                info.provider,
                info.id,
                ms,
                "error" if failed else "completed",
                message.stop_reason if failed else None,
                context=self.ctx,
            ),
        )
        if not failed:
            self.fire(
                "llm_output",
                lambda: ev.LlmOutputEvent(
                    run_id,
                    self.ctx.session_id,
                    info.provider,
                    info.id,
                    [message.text] if message.text else [],
                    message.usage.to_json(),
                    context=self.ctx,
                ),
            )

    # -- finishing ----------------------------------------------------------------------------------------
    async def before_finalize(self, message: AssistantMessage) -> list[UserMessage]:
        if not self.runner.has("before_agent_finalize") or self.revisions >= MAX_FINALIZE_REVISIONS:
            return []
        if message.stop_reason != "stop":
            return []
        outcome = await self.runner.modify(
            "before_agent_finalize",
            ev.BeforeAgentFinalizeEvent(
                self.ctx.run_id,
                self.ctx.session_id,
                message.text,
                message.provider,
                message.model,
                context=self.ctx,
            ),
        )
        result: ev.BeforeAgentFinalizeResult = outcome.result
        if result.action != "revise":
            return []
        self.revisions += 1
        instruction = (result.retry or {}).get("instruction") or result.reason or "Please revise your answer."
        return [UserMessage(str(instruction))]


@dataclasses.dataclass
class PromptChanges:
    """What the prompt hooks changed: the system prompt, text around the user's prompt, the tool set."""

    system_prompt: str
    prepend: str = ""
    append: str = ""
    tools_allow: list[str] | None = None
    model_override: str | None = None


class RunPhases:
    """The run-level hook points, in the order a run meets them."""

    def __init__(self, hooks: RuntimeHooks) -> None:
        self.h = hooks
        self.runner = hooks.runner
        self.ctx = hooks.ctx

    async def resolve_model(self, prompt: str) -> str | None:
        """``before_model_resolve``: a model ref override (provider/model), or None."""
        if not self.runner.has("before_model_resolve"):
            return None
        outcome = await self.runner.modify("before_model_resolve", ev.BeforeModelResolveEvent(prompt, context=self.ctx))
        r: ev.BeforeModelResolveResult = outcome.result
        return _ref(r.provider_override, r.model_override)

    async def prompt_changes(
        self, prompt: str, messages: list[dict[str, Any]], injections: list[dict[str, Any]], system_prompt: str
    ) -> PromptChanges:
        """``agent_turn_prepare``, ``before_prompt_build`` and the legacy ``before_agent_start``."""
        out = PromptChanges(system_prompt)
        for inj in injections:
            text = str(inj.get("text", ""))
            if inj.get("placement") == "append_context":
                out.append = _join(out.append, text)
            else:
                out.prepend = _join(out.prepend, text)
        if self.runner.has("agent_turn_prepare"):
            o = await self.runner.modify(
                "agent_turn_prepare",
                ev.AgentTurnPrepareEvent(prompt, list(messages), list(injections), context=self.ctx),
            )
            out.prepend = _join(out.prepend, o.result.prepend_context)
            out.append = _join(out.append, o.result.append_context)
        if self.runner.has("before_prompt_build"):
            o = await self.runner.modify(
                "before_prompt_build", ev.BeforePromptBuildEvent(prompt, list(messages), context=self.ctx)
            )
            b: ev.BeforePromptBuildResult = o.result
            if b.system_prompt:
                out.system_prompt = b.system_prompt
            out.system_prompt = _join(_join(b.prepend_system_context, out.system_prompt), b.append_system_context)
            out.prepend = _join(out.prepend, b.prepend_context)
            out.append = _join(out.append, b.append_context)
            out.tools_allow = b.tools_allow
        if self.runner.has("before_agent_start"):
            o = await self.runner.modify(
                "before_agent_start",
                ev.BeforeAgentStartEvent(prompt, self.ctx.run_id, list(messages), context=self.ctx),
            )
            s: ev.BeforeAgentStartResult = o.result
            if s.system_prompt:
                out.system_prompt = s.system_prompt
            out.prepend = _join(out.prepend, s.prepend_context)
            out.append = _join(out.append, s.append_context)
            out.model_override = _ref(s.provider_override, s.model_override)
        return out

    async def gate(
        self, prompt: str, system_prompt: str, messages: list[dict[str, Any]], channel: str | None
    ) -> ev.BeforeAgentRunResult | None:
        """``before_agent_run`` (fail-closed): the blocking decision, or None to go on."""
        if not self.runner.has("before_agent_run"):
            return None
        outcome = await self.runner.modify(
            "before_agent_run", ev.BeforeAgentRunEvent(prompt, list(messages), system_prompt, channel, context=self.ctx)
        )
        result: ev.BeforeAgentRunResult = outcome.result
        if result.outcome == "block":
            if not result.reason:
                result.reason = f"blocked by {outcome.decided_by or 'a plugin'}"
            return result
        return None

    async def claim_reply(self, prompt: str) -> ev.BeforeAgentReplyResult | None:
        """``before_agent_reply``: a plugin's answer instead of the model's, or None."""
        if not self.runner.has("before_agent_reply"):
            return None
        result, _plugin = await self.runner.claim("before_agent_reply", ev.BeforeAgentReplyEvent(prompt, self.ctx))
        return result if isinstance(result, ev.BeforeAgentReplyResult) else None

    def filter_write(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """``tool_result_persist`` then ``before_message_write`` (sync): the message to write, or None."""
        if message.get("role") == "toolResult" and self.runner.has("tool_result_persist"):
            r = self.runner.sync(
                "tool_result_persist",
                ev.ToolResultPersistEvent(
                    message, message.get("toolName"), message.get("toolCallId"), context=self.ctx
                ),
            )
            if isinstance(r, ev.ToolResultPersistResult) and r.message is not None:
                message = r.message
        if self.runner.has("before_message_write"):
            w = self.runner.sync(
                "before_message_write",
                ev.BeforeMessageWriteEvent(message, self.ctx.session_key, self.ctx.agent_id, context=self.ctx),
            )
            if isinstance(w, ev.BeforeMessageWriteResult):
                if w.block:
                    return None
                if w.message is not None:
                    message = w.message
        return message

    async def sending(self, to: str, content: str) -> str | None:
        """``message_sending``: the content to deliver, or None when a plugin cancelled it."""
        if not self.runner.has("message_sending"):
            return content
        outcome = await self.runner.modify("message_sending", ev.MessageSendingEvent(to, content, context=self.ctx))
        r: ev.MessageSendingResult = outcome.result
        if r.cancel:
            return None
        return r.content if r.content is not None else content


def _join(a: str | None, b: str | None) -> str:
    return "\n\n".join(x for x in (a, b) if x)


def _ref(provider: str | None, model: str | None) -> str | None:
    if not model:
        return None
    if "/" in model or not provider:
        return model
    return f"{provider}/{model}"
