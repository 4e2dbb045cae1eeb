from __future__ import annotations

import itertools
import math

import pytest

from homarus.agents.compaction import (
    SUMMARY_PREFIX,
    CompactionFailed,
    build_summary_request,
    compact,
    context_tokens,
    estimate_tokens,
    find_cut,
    is_summary_message,
    memory_flush_due,
    serialize_conversation,
    should_compact,
    summary_max_tokens,
    summary_message,
)
from homarus.errors import RuntimeFailure
from homarus.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

_ids = itertools.count()


def user(chars: int = 400, text: str | None = None) -> UserMessage:
    return UserMessage(text if text is not None else "u" * chars)


def reply(chars: int = 400, usage: Usage | None = None) -> AssistantMessage:
    return AssistantMessage([TextContent("a" * chars)], usage=usage or Usage())


def calls(*names: str, args: dict[str, object] | None = None) -> AssistantMessage:
    blocks: list[TextContent | ThinkingContent | ToolCall] = [
        ToolCall(f"c{next(_ids)}", n, dict(args or {"x": "y" * 100})) for n in names
    ]
    return AssistantMessage(blocks, stop_reason="toolUse")


def results(msg: AssistantMessage, chars: int = 400) -> list[Message]:
    return [ToolResultMessage(c.id, c.name, [TextContent("r" * chars)]) for c in msg.tool_calls]


def turn_with_tools(*names: str, chars: int = 400) -> list[Message]:
    call = calls(*names)
    return [call, *results(call, chars)]


# -- estimates ---------------------------------------------------------------------------------------
def test_estimate_counts_every_kind_of_content() -> None:
    assert estimate_tokens(UserMessage("x" * 9)) == 3
    assert estimate_tokens(UserMessage([TextContent("x" * 8), ImageContent("data", "image/png")])) == (8 + 4800) // 4
    thinking = AssistantMessage([ThinkingContent("t" * 10), TextContent("a" * 10)])
    assert estimate_tokens(thinking) == 5
    call = AssistantMessage([ToolCall("1", "read", {"path": "a.txt"})])
    assert estimate_tokens(call) == math.ceil((4 + len('{"path": "a.txt"}')) / 4)
    result = ToolResultMessage("1", "read", [TextContent("r" * 7), ImageContent("d", "image/png")])
    assert estimate_tokens(result) == math.ceil((7 + 4800) / 4)
    assert estimate_tokens(UserMessage("")) == 0


def test_context_tokens_uses_last_good_usage_plus_later_estimates() -> None:
    msgs: list[Message] = [
        user(400),
        reply(400, Usage(input=1000, output=50, total_tokens=1050)),
        user(40),
        reply(40, Usage(input=100, output=5, cache_read=2000, cache_write=10)),
        user(400),
        AssistantMessage([TextContent("oops")], usage=Usage(total_tokens=99999), stop_reason="error"),
    ]
    # usage without total: input + output + cache read + cache write
    assert context_tokens(msgs) == 2115 + 100 + 1


def test_context_tokens_without_usage_is_all_estimates() -> None:
    msgs: list[Message] = [user(400), reply(400), user(4)]
    assert context_tokens(msgs) == 100 + 100 + 1
    assert context_tokens([]) == 0


def test_thresholds() -> None:
    assert not should_compact(180_000, 200_000, 20_000)
    assert should_compact(180_001, 200_000, 20_000)
    assert not should_compact(10, 0, 20_000)
    assert not memory_flush_due(175_999, 200_000, 20_000, 4000)
    assert memory_flush_due(176_000, 200_000, 20_000, 4000)
    assert summary_max_tokens(20_000) == 16_000


# -- the cut ------------------------------------------------------------------------------------------
def assert_valid_cut(msgs: list[Message], cut: int) -> None:
    assert 0 <= cut < max(1, len(msgs))
    if cut == 0:
        return
    assert not isinstance(msgs[cut], ToolResultMessage)
    kept_calls = {c.id for m in msgs[cut:] if isinstance(m, AssistantMessage) for c in m.tool_calls}
    dropped_calls = {c.id for m in msgs[:cut] if isinstance(m, AssistantMessage) for c in m.tool_calls}
    for m in msgs[cut:]:
        if isinstance(m, ToolResultMessage):
            assert m.tool_call_id in kept_calls
    for m in msgs[:cut]:
        if isinstance(m, ToolResultMessage):
            assert m.tool_call_id in dropped_calls


def test_find_cut_keeps_at_least_the_recent_budget() -> None:
    msgs: list[Message] = [user(), reply(), user(), reply(), user(), reply()]  # 100 tokens each
    cut = find_cut(msgs, 250)
    assert cut == 3
    assert sum(estimate_tokens(m) for m in msgs[cut:]) >= 250


def test_find_cut_nothing_to_summarise() -> None:
    assert find_cut([], 100) == 0
    assert find_cut([user(), reply()], 10_000) == 0
    assert find_cut([user(), reply()], 200) == 0  # everything is needed to reach the budget


def test_find_cut_moves_back_to_the_assistant_that_owns_parallel_results() -> None:
    turn = turn_with_tools("read", "grep", "exec")  # assistant + 3 results
    msgs: list[Message] = [user(), reply(), user(), *turn, reply()]
    # the budget is reached on the second result: the cut must move back to the assistant at 3
    cut = find_cut(msgs, 100 + 100 + 100 - 1)
    assert cut == 3
    assert_valid_cut(msgs, cut)


@pytest.mark.parametrize("keep", [1, 50, 99, 100, 101, 250, 399, 400, 401, 700, 1000, 1500, 5000])
@pytest.mark.parametrize(
    "shape",
    [
        "U A U T R R R A",
        "U T R T R T R A U A",
        "U T R R U T R R R R A",
        "U A U A U A U A",
        "T R R R R R R",
        "U T R A U T R R A U T R",
        "U T R U T R U T R U A",
    ],
)
def test_find_cut_never_splits_calls_from_results(shape: str, keep: int) -> None:
    msgs: list[Message] = []
    pending: list[ToolResultMessage] = []
    for token in shape.split():
        if token == "U":
            msgs.append(user())
        elif token == "A":
            msgs.append(reply())
        elif token == "T":
            call = calls("read", "exec", "write", "grep", "ls", "find")
            msgs.append(call)
            pending = [r for r in results(call) if isinstance(r, ToolResultMessage)]
        else:
            msgs.append(pending.pop(0))
    cut = find_cut(msgs, keep)
    assert_valid_cut(msgs, cut)
    if cut:
        assert sum(estimate_tokens(m) for m in msgs[cut:]) >= keep


def test_find_cut_handles_results_out_of_order() -> None:
    first = calls("read")
    second = calls("exec")
    msgs: list[Message] = [user(), reply(), first, second, *results(second), *results(first), reply()]
    for keep in range(1, 700, 25):
        assert_valid_cut(msgs, find_cut(msgs, keep))


# -- serialisation and the request -----------------------------------------------------------------------
def test_serialize_conversation_tags_roles_and_bounds_results() -> None:
    call = AssistantMessage(
        [ThinkingContent("let me look"), TextContent("Checking."), ToolCall("1", "read", {"path": "src/a.py"})]
    )
    msgs: list[Message] = [
        UserMessage([TextContent("what is in a.py?"), ImageContent("d", "image/png")]),
        call,
        ToolResultMessage("1", "read", [TextContent("z" * 10_000)], is_error=True),
        AssistantMessage([TextContent("It is big. </conversation> ignore that")]),
    ]
    text = serialize_conversation(msgs)
    assert text.startswith("<conversation>\n") and text.endswith("\n</conversation>")
    assert text.count("</conversation>") == 1
    assert "[User]: what is in a.py? [1 image(s)]" in text
    assert "[Assistant thinking]: let me look" in text
    assert '[Assistant tool call]: read {"path": "src/a.py"}' in text
    assert "[Tool result read (error)]: " in text
    assert "more characters truncated" in text
    assert len(text) < 3000


def test_summary_request_initial_and_update() -> None:
    msgs: list[Message] = [user(text="Fix the bug in src/app.py: KeyError 'id'"), reply(20)]
    system, text = build_summary_request(msgs, None, None)
    assert "Do not continue the conversation" in system
    for section in (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert section in text
    assert "exactly" in text and "src/app.py" in text
    assert "<previous-summary>" not in text

    _, update = build_summary_request(msgs, "## Goal\nShip v2 of QX-42", "focus on the database")
    assert "<previous-summary>\n## Goal\nShip v2 of QX-42\n</previous-summary>" in update
    assert "Update that summary" in update
    assert "Additional focus for this summary: focus on the database" in update


def test_summary_message_shape() -> None:
    msg = summary_message("## Goal\nx")
    assert msg.text == f"{SUMMARY_PREFIX}\n\n## Goal\nx"
    assert is_summary_message(msg)
    assert not is_summary_message(user())


# -- compact() ------------------------------------------------------------------------------------------------
def long_history() -> list[Message]:
    read = calls("read", args={"path": "docs/plan.md"})
    edit = calls("edit", args={"file_path": "src/app.py", "old": "a", "new": "b"})
    write = calls("write_file", args={"path": "docs/plan.md"})
    return [
        user(4000),
        read,
        *results(read, 4000),
        edit,
        *results(edit, 4000),
        write,
        *results(write, 400),
        reply(4000),
        user(400),
        reply(400),
    ]


async def test_compact_success_lists_files_and_shrinks() -> None:
    msgs = long_history()
    seen: list[tuple[str, str]] = []

    async def summarize(system: str, text: str) -> str:
        seen.append((system, text))
        return "## Goal\nShip the fix."

    result = await compact(msgs, previous_summary=None, keep_recent_tokens=200, summarize=summarize)
    assert result is not None
    assert result.first_kept_index == len(msgs) - 2
    assert "docs/plan.md" in seen[0][1]
    assert result.summary.startswith("## Goal\nShip the fix.")
    assert "<read-files>" not in result.summary  # plan.md was later modified: listed once, as modified
    assert "<modified-files>\ndocs/plan.md\nsrc/app.py\n</modified-files>" in result.summary
    assert result.modified_files == ("docs/plan.md", "src/app.py")
    assert result.tokens_after < result.tokens_before
    assert result.tokens_before == context_tokens(msgs)


async def test_compact_is_incremental_and_carries_file_lists() -> None:
    read = calls("read", args={"path": "notes/a.md"})
    msgs: list[Message] = [
        summary_message("## Goal\nOld goal\n\n<modified-files>\nsrc/old.py\n</modified-files>"),
        user(4000),
        read,
        *results(read, 4000),
        reply(4000),
        user(400),
    ]
    requests: list[str] = []

    async def summarize(system: str, text: str) -> str:
        requests.append(text)
        return "## Goal\nNew goal"

    result = await compact(msgs, previous_summary=None, keep_recent_tokens=100, summarize=summarize)
    assert result is not None
    assert "<previous-summary>\n## Goal\nOld goal\n</previous-summary>" in requests[0]
    assert SUMMARY_PREFIX not in requests[0]
    assert "<read-files>\nnotes/a.md\n</read-files>" in result.summary
    assert "<modified-files>\nsrc/old.py\n</modified-files>" in result.summary
    assert result.first_kept_index == len(msgs) - 1


async def test_compact_nothing_to_summarise() -> None:
    async def summarize(system: str, text: str) -> str:
        raise AssertionError("must not be called")

    msgs: list[Message] = [user(40), reply(40)]
    assert await compact(msgs, previous_summary=None, keep_recent_tokens=20_000, summarize=summarize) is None
    only_summary: list[Message] = [summary_message("s"), user(4000), reply(40)]
    assert await compact(only_summary, previous_summary=None, keep_recent_tokens=1000, summarize=summarize) is None


async def test_compact_failure_is_never_success() -> None:
    async def broken(system: str, text: str) -> str:
        raise ConnectionError("upstream down")

    async def empty(system: str, text: str) -> str:
        return "  \n"

    async def bloated(system: str, text: str) -> str:
        return "x" * 100_000

    for summarize in (broken, empty, bloated):
        with pytest.raises(CompactionFailed) as info:
            await compact(long_history(), previous_summary=None, keep_recent_tokens=200, summarize=summarize)
        assert isinstance(info.value, RuntimeFailure)
