"""The agent bench's report: its targets, the original's recorded numbers, and the Markdown table."""

from __future__ import annotations

from typing import Any

from bench.harness import machine_footer, markdown_table, verdict

# Targets from the issue.
TARGET_INPROC_PLAIN_MS = 2.0
TARGET_E2E_TOOL_MS = 20.0
TARGET_FIRST_TURN_S = 0.3
TARGET_REQUEST_BYTES = 15_000

# The original OpenClaw gateway, from /work/shared/peers/openclaw/README.md ("Measured numbers",
# 3 runs on the same kind of shared 2-core VM, a fake OpenAI-compatible model over HTTP).
OPENCLAW = {
    "first": "11.2-15.4 s",
    "next": "0.82-1.60 s",
    "tool": "0.58-0.91 s",
    "chat": "0.59-0.89 s",
    "bytes": "60,015 B (48,048-char system prompt, 12 tools)",
}


def _p(s: dict[str, float], digits: int = 2) -> str:
    return f"{s['p50']:.{digits}f} / {s['p95']:.{digits}f}"


def render(r: dict[str, Any]) -> str:
    rows: list[tuple[str, str, str, str, str]] = []
    for where, res in r["inprocess"].items():
        label = f"state on {where} ({res['dir']})"
        for kind in ("plain", "tool"):
            k = res[kind]
            t, o = k["turn_ms"], k["overhead_ms"]
            is_plain = kind == "plain"
            rows.append(
                (
                    f"in-process {'plain' if is_plain else 'one-tool'} turn p50 / p95, {int(t['n'])} turns in one"
                    f" session, {label}",
                    f"{_p(t)} ms; {k['turns_per_s']:.0f} turns/s",
                    f"p50 ≤ {TARGET_INPROC_PLAIN_MS:.0f} ms" if is_plain else "—",
                    verdict(o["p50"] <= TARGET_INPROC_PLAIN_MS) if is_plain else "—",
                    "—",
                )
            )
            rows.append(
                (
                    "  per turn: fsync calls, fsync ms; scripted model ms; overhead (turn - model) p50 / p95;"
                    " first / last tenth mean",
                    f"{k['fsync_calls_per_turn']:.1f}, {k['fsync_ms_per_turn']:.2f} ms;"
                    f" {k['model_ms_per_turn']:.2f} ms;"
                    f" {_p(o)} ms; {k['tenths_ms'][0]:.2f} / {k['tenths_ms'][1]:.2f} ms",
                    "—",
                    "—",
                    "—",
                )
            )
    for where, res in r["e2e"].items():
        tool, plain, chat = res["tool"], res["plain"], res["chat"]
        suffix = f"state on {where}"
        rows.append(
            (
                f"end to end: `agent` one-tool turn, request → final res, p50 / p95 of"
                f" {int(tool['final_ms']['n'])}, {suffix}",
                f"{_p(tool['final_ms'])} ms",
                f"≤ {TARGET_E2E_TOOL_MS:.0f} ms",
                verdict(tool["final_ms"]["p50"] <= TARGET_E2E_TOOL_MS),
                OPENCLAW["tool"],
            )
        )
        rows.append(
            (
                f"end to end: `agent` plain turn p50 / p95, {suffix}",
                f"{_p(plain['final_ms'])} ms",
                "—",
                "—",
                OPENCLAW["next"] + " (next turn)",
            )
        )
        rows.append(
            (
                f"end to end: `chat.send` → `chat` final p50 / p95, {suffix}",
                f"{_p(chat['final_ms'])} ms",
                "—",
                "—",
                OPENCLAW["chat"],
            )
        )
        trio = (tool, plain, chat)
        rows.append(
            (
                "  `agent` → `accepted` ack p50 (tool / plain); frames received per turn (tool / plain / chat)",
                f"{tool['accepted_ms']['p50']:.2f} / {plain['accepted_ms']['p50']:.2f} ms; "
                + " / ".join(f"{x['frames_per_turn']:.1f}" for x in trio),
                "—",
                "—",
                "—",
            )
        )
        rows.append(
            (
                "  gateway CPU per turn; mean of the first → last tenth of the turns (tool / plain / chat);"
                " gateway RSS after all of them",
                " / ".join(f"{x['server_cpu_ms_per_turn']:.1f}" for x in trio)
                + " ms; "
                + " / ".join(f"{x['tenths_ms'][0]:.1f} → {x['tenths_ms'][1]:.1f}" for x in trio)
                + f" ms; {res['rss_after_mib']:.1f} MiB",
                "—",
                "—",
                "—",
            )
        )
    f = r["first"]
    rows.append(
        (
            f"first `agent` turn after start: request → final res (median of {int(f['turn_s']['n'])} fresh"
            " gateways; min / max)",
            f"{f['turn_s']['p50']:.3f} s ({f['turn_s']['min']:.3f} / {f['turn_s']['max']:.3f})",
            f"≤ {TARGET_FIRST_TURN_S} s",
            verdict(f["turn_s"]["p50"] <= TARGET_FIRST_TURN_S),
            OPENCLAW["first"],
        )
    )
    rows.append(
        (
            "  spawn → `/health` 200; connect → hello-ok; spawn → first final res; second turn (medians)",
            f"{f['health_s']['p50']:.3f} s; {f['connect_s']['p50'] * 1000:.1f} ms;"
            f" {f['spawn_to_final_s']['p50']:.3f} s; {f['second_turn_s']['p50'] * 1000:.1f} ms",
            "—",
            "—",
            "—",
        )
    )
    h = r["http"]
    hi = h["hi_request"]
    rows.append(
        (
            'model request body for "hi" (`openai-completions`, default tools, fresh workspace)',
            f"{hi['bytes']:,} B ({hi['bytes'] / 1024:.1f} KiB)",
            f"≤ {TARGET_REQUEST_BYTES // 1000} KB",
            verdict(hi["bytes"] <= TARGET_REQUEST_BYTES),
            OPENCLAW["bytes"],
        )
    )
    rows.append(
        (
            "  system prompt; tools (count, JSON bytes); messages",
            f"{hi['system_prompt_chars']:,} chars; {hi['tools']} tools, {hi['tools_bytes']:,} B; {hi['messages']}",
            "—",
            "—",
            "—",
        )
    )
    for kind, peer in (("tool", OPENCLAW["tool"]), ("plain", OPENCLAW["next"] + " (next turn)")):
        k = h[kind]
        rows.append(
            (
                f"`agent` {'one-tool' if kind == 'tool' else 'plain'} turn over HTTP to the loopback model, p50 / p95"
                f" of {int(k['final_ms']['n'])} (largest request {k['request_bytes_max']:,} B)",
                f"{_p(k['final_ms'])} ms",
                "—",
                "—",
                peer,
            )
        )
    footer = [
        *machine_footer(r, f" Disk temp dir: {r['tmpdir']}."),
        "Other processes' CPU during each phase (cores): "
        + ", ".join(f"{phase} {cores:.2f}" for phase, cores in r["other_cpu_cores"].items())
        + ".",
    ]
    return "\n".join(markdown_table(("metric", "Homarus", "target", "result", "OpenClaw (recorded)"), rows) + footer)
