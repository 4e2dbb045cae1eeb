"""The wide CLI matrix: the original's CLI (`openclaw` 2026.9.6), command by command, against the
original gateway and against Homarus, with a tap between CLI and gateway recording which methods
each command calls (so the matrix says which rows reach a gateway at all).

``python -m tests.compat.cli_matrix record`` runs every command of :data:`COMMANDS` against both
gateways in one sitting (the original from ``../shared/peers/openclaw/start.sh`` on
:data:`PEER_PORT`, a Homarus it starts itself) and writes what each answered to
``tests/fixtures/openclaw-cli-matrix.json``; ``python -m tests.compat.cli_matrix doc`` writes the
table of docs/openclaw-compat.md from that file. tests/compat/test_cli_matrix.py replays the
gateway rows against a fresh Homarus and checks the doc is current.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.compat.openclaw_cli import cli

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openclaw-cli-matrix.json"
DOC = Path(__file__).resolve().parents[2] / "docs" / "openclaw-compat.md"
PEER_PORT = 19789
PEER_TOKEN = "peer-gateway-token-0123456789abcdef"

#: what a user types after `openclaw`, in order (some leave state the next ones read: the
#: unknown ids are the same on both gateways, so each answers "not found" its own way)
COMMANDS: list[str] = [
    "health",
    "health --json",
    "status",
    "status --json",
    "sessions",
    "sessions --json",
    "sessions list",
    "sessions archive nope",
    "sessions delete nope",
    "sessions compact nope",
    "agents list",
    "agents bindings",
    "approvals get",
    "approvals get --gateway",
    "approvals pending",
    "approvals resolve nope allow-once",
    "approvals grants list",
    "approvals allowlist list",
    "browser status",
    "browser profiles",
    "browser tabs",
    "channels list",
    "channels status",
    "channels capabilities",
    "channels logs",
    "cron status",
    "cron list",
    "cron list --json",
    "cron get nope",
    "cron show nope",
    "cron runs --id nope",
    "cron run nope",
    "cron rm nope",
    "cron enable nope",
    "cron disable nope",
    "cron scratch nope",
    "daemon status",
    "gateway status",
    "gateway health",
    "gateway probe",
    "gateway stability",
    "gateway usage-cost",
    "gateway call health",
    "gateway call nope.method",
    "devices list",
    "devices approve nope",
    "devices reject nope",
    "devices remove nope",
    "hooks list",
    "hooks check",
    "hooks info nope",
    "logs --limit 5",
    "memory status",
    "memory search lobster",
    "message read --channel telegram -t 1",
    "models list",
    "models status",
    "models aliases list",
    "models fallbacks list",
    "mcp list",
    "mcp status",
    "nodes status",
    "nodes list",
    "nodes pending",
    "nodes describe --node nope",
    "nodes approve nope",
    "nodes reject nope",
    "pairing list",
    "plugins list",
    "sandbox list",
    "secrets reload",
    "security audit",
    "skills list",
    "skills check",
    "skills info nope",
    "skills library list",
    "skills curator status",
    "system presence",
    "system heartbeat last",
    "system event --text matrix-check",
    "tasks list",
    "tasks audit",
    "tasks show nope",
    "transcripts list",
    "users list",
    "worktrees list",
    "audit",
    "usage",
    "config get gateway.port",
    "exec-policy show",
    "update status",
    "telemetry show",
    "cron edit nope --name renamed",
    "devices rotate --device nope --role operator",
    "devices revoke --device nope --role operator",
    "devices rename --device nope --name phone",
    "devices clear --pending --yes",
    "nodes invoke --node nope --command system.run",
    "nodes notify --node nope --title hi",
    "nodes remove --node nope",
    "nodes rename --node nope --name box",
    "users link-email a@example.com",
    "backup disable",
    "browser snapshot",
    "browser wait --time 10",
    "browser cookies",
    "cron add --name matrix-job --every 1h --message hi",
    "devices join-code",
    "models accounts list",
    "nodes push --node nope",
    "qr --setup-code-only",
    "gateway resume nope",
    "gateway suspend",  # last: the original refuses much of the rest while suspended
]

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: what changes from run to run (times, ids, ports, paths, sizes): blanked before comparing lines
VOLATILE = re.compile(
    r"\d{4}-\d\d-\d\dT[\d:.]+Z?|\b\d+(\.\d+)?\s?(ms|s|m|h|d|KB|MB|GB|B)\b|/tmp/\S+|\b[0-9a-f]{8,}\b|\b\d+\b"
)


@dataclass
class Outcome:
    exit: int
    methods: list[str]
    out: str

    def json(self) -> dict[str, Any]:
        return {"exit": self.exit, "methods": self.methods, "out": self.out}


@dataclass
class Tap:
    """A WebSocket relay on loopback in front of a gateway, noting each request's method under
    the label of the command running."""

    upstream: str
    port: int = 0
    label: str = ""
    methods: dict[str, list[str]] = field(default_factory=dict)

    def note(self, raw: str | bytes) -> None:
        try:
            frame = json.loads(raw)
        except ValueError:
            return
        if isinstance(frame, dict) and frame.get("type") == "req" and frame.get("method") != "connect":
            self.methods.setdefault(self.label, []).append(str(frame.get("method")))


@contextmanager
def tapped(upstream: str) -> Iterator[Tap]:
    import websockets

    tap = Tap(upstream)
    ready = threading.Event()
    stop: list[asyncio.Future[None]] = []

    async def relay(client: Any) -> None:
        async with websockets.connect(upstream, max_size=None, open_timeout=30) as server:

            async def up() -> None:
                async for raw in client:
                    tap.note(raw)
                    await server.send(raw)

            async def down() -> None:
                async for raw in server:
                    await client.send(raw)

            pumps = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for pump in pumps:
                pump.cancel()

    async def main() -> None:
        async with websockets.serve(relay, "127.0.0.1", 0, max_size=None) as server:
            tap.port = next(iter(server.sockets)).getsockname()[1]
            stop.append(asyncio.get_running_loop().create_future())
            ready.set()
            await stop[0]

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield tap
    finally:
        loop.call_soon_threadsafe(stop[0].set_result, None)
        thread.join(10)


def clean(text: str) -> str:
    """The output as a user reads it: colours gone, the CLI's banner lines and blank lines dropped."""
    lines = [ANSI.sub("", line).rstrip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line.strip() and not line.lstrip().startswith("🦞 OpenClaw"))


def run(url: str, token: str, command: str, home: Path) -> tuple[int, str]:
    try:
        done = cli(url, token, command.split(), home, config_file=True, env_too=True)
    except subprocess.TimeoutExpired:
        return -1, "(timed out)"
    return done.returncode, clean(done.stdout + done.stderr)


def key_line(original: str, ours: str) -> str:
    """The longest line both outputs print (numbers, times and ids aside), or ''."""
    theirs = {VOLATILE.sub("#", line.strip()): line.strip() for line in original.splitlines()}
    shared = [line.strip() for line in ours.splitlines() if VOLATILE.sub("#", line.strip()) in theirs]
    usable = [line for line in shared if len(line) >= 8 and not VOLATILE.search(line)]
    return max(usable, key=len, default="")


def record_side(url: str, token: str, home: Path) -> dict[str, Outcome]:
    out: dict[str, Outcome] = {}
    with tapped(url) as tap:
        for command in COMMANDS:
            tap.label = command
            code, text = run(f"ws://127.0.0.1:{tap.port}", token, command, home)
            time.sleep(0.2)  # the relay notes the last frames
            out[command] = Outcome(code, sorted(set(tap.methods.get(command, []))), text[:1500])
            print(f"{code:3} {command}: {out[command].methods}", file=sys.stderr)
    return out


def record() -> None:
    from tests.gateway_process import scrubbed_env, start_gateway, write_config

    stamp = int(time.time())
    with ThreadPoolExecutor(2) as pool:
        peer = f"ws://127.0.0.1:{PEER_PORT}"
        original = pool.submit(record_side, peer, PEER_TOKEN, Path(f"/tmp/cli-matrix-o{stamp}"))
        state = Path(f"/tmp/cli-matrix-h{stamp}/state")
        write_config(state, json.dumps({"gateway": {"auth": {"token": PEER_TOKEN}}}))
        with start_gateway(scrubbed_env(state)) as gw:
            gw.wait_listening()
            ours = record_side(gw.url, PEER_TOKEN, Path(f"/tmp/cli-matrix-h{stamp}/home"))
        theirs = original.result()
    rows = {}
    for command in COMMANDS:
        o, h = theirs[command], ours[command]
        rows[command] = {
            "gateway": bool(o.methods or h.methods),
            "original": o.json(),
            "homarus": h.json(),
            "key": key_line(o.out, h.out) if o.exit == h.exit else "",
        }
    doc = {
        "provenance": f"recorded {time.strftime('%Y-%m-%d')} with `python -m tests.compat.cli_matrix record`: "
        "openclaw 2026.9.6's CLI against its own gateway (../shared/peers/openclaw, start.sh, fake model) "
        "and against Homarus, in one sitting, a tap noting each command's methods",
        "rows": rows,
    }
    FIXTURE.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# -- the doc table --------------------------------------------------------------------------
BEGIN = "<!-- cli-matrix:begin (python -m tests.compat.cli_matrix doc) -->"
END = "<!-- cli-matrix:end -->"


def load() -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))["rows"]
    return rows


def _first(out: str) -> str:
    line = next((x.strip() for x in out.splitlines() if x.strip()), "")
    line = re.sub(r"/tmp/cli-matrix-\w+/(home/)?state", "$OPENCLAW_STATE_DIR", line)  # the recording's own dirs
    line = line.replace("|", "\\|").replace("`", "'")
    return f"{line[:70]}…" if len(line) > 70 else line


#: commands whose exit code on Homarus is not the original's, with why (each checked by the test)
_NO_SUSPEND = (
    "differs: suspending a gateway to hand its work to another is not a Homarus feature; `gateway.suspend.*` says so"
)
DIFFERENCES: dict[str, str] = {
    "gateway suspend": _NO_SUSPEND,
    "gateway resume nope": _NO_SUSPEND,
}


def verdict(command: str, row: dict[str, Any]) -> str:
    if not row["gateway"]:
        return "local: reads the CLI's own files, no gateway call"
    if command in DIFFERENCES:
        return DIFFERENCES[command]
    if row["key"]:
        return "same"
    return "same exit code (each gateway's own data)"


def table(rows: dict[str, dict[str, Any]]) -> str:
    gateway = [c for c, r in rows.items() if r["gateway"]]
    differ = [c for c in gateway if rows[c]["original"]["exit"] != rows[c]["homarus"]["exit"]]
    out = [
        f"**{len(rows)} commands, {len(gateway)} of them reach a gateway, {len(differ)} of those end "
        "differently on Homarus (the table says why).**",
        "",
        "| command | methods the CLI calls | original | Homarus | |",
        "| --- | --- | --- | --- | --- |",
    ]
    for command, row in rows.items():
        o, h = row["original"], row["homarus"]
        methods = ", ".join(f"`{m}`" for m in sorted(set(o["methods"]) | set(h["methods"]))) or "—"
        out.append(
            f"| `{command}` | {methods} | {o['exit']}: {_first(o['out'])} | {h['exit']}: {_first(h['out'])} "
            f"| {verdict(command, row)} |"
        )
    return "\n".join(out)


def write_doc() -> None:
    text = DOC.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    DOC.write_text(f"{head}{BEGIN}\n{table(load())}\n{END}{tail}", encoding="utf-8")


def doc_table() -> str:
    """The table docs/openclaw-compat.md has now."""
    text = DOC.read_text(encoding="utf-8")
    return text.partition(BEGIN)[2].partition(END)[0].strip("\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["record"]:
        record()
    elif sys.argv[1:] == ["doc"]:
        write_doc()
    else:
        sys.exit("usage: python -m tests.compat.cli_matrix record|doc")
