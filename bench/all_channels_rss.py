"""Idle memory with every bundled chat channel configured at once, against none.

Run with ``.venv/bin/python bench/all_channels_rss.py [--settle S] [--runs N]``. One gateway
process with Telegram (polling), Discord (a Gateway session), Slack (Socket Mode) and WhatsApp
(Cloud API webhooks) configured against their fakes on loopback (``tests/fakes/``), read ``settle``
seconds after every account has reached its platform; the least of ``runs`` fresh starts, against
the same gateway with no channel. Target (issue #33): ≤ 10 MB per channel over none.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from tests.fakes.discord_server import run_fake_discord
from tests.fakes.slack_server import run_fake_slack
from tests.fakes.telegram_server import run_fake_telegram
from tests.fakes.whatsapp_server import PHONE_NUMBER_ID, VERIFY_TOKEN, run_fake_whatsapp

from bench.channel_parts import base_config, channel_gateway, idle_rss
from bench.harness import GatewayProcess, bench_main, machine_facts, machine_footer, markdown_table, progress

SECRETS = (
    "TELEGRAM_BOT_TOKEN",
    "DISCORD_BOT_TOKEN",
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "WHATSAPP_ACCESS_TOKEN",
    "WHATSAPP_APP_SECRET",
    "WHATSAPP_VERIFY_TOKEN",
)


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_facts(),
        "loadavg_before": list(os.getloadavg()),
    }
    with contextlib.ExitStack() as stack:
        telegram = stack.enter_context(run_fake_telegram())
        discord = stack.enter_context(run_fake_discord())
        slack = stack.enter_context(run_fake_slack())
        whatsapp = stack.enter_context(run_fake_whatsapp())
        cfg = base_config()
        cfg["channels"] = {
            "telegram": {"botToken": telegram.token, "apiRoot": telegram.api_root},
            "discord": {"token": discord.token, "apiRoot": discord.api_root},
            "slack": {"botToken": slack.bot_token, "appToken": slack.app_token, "apiRoot": slack.api_root},
            "whatsapp": {
                "accessToken": whatsapp.token,
                "phoneNumberId": PHONE_NUMBER_ID,
                "appSecret": whatsapp.app_secret,
                "verifyToken": VERIFY_TOKEN,
                "apiRoot": whatsapp.api_root,
            },
        }

        def all_connected(gw: GatewayProcess, polls: int, identifies: int, connections: int) -> bool:
            url = f"http://127.0.0.1:{gw.port}/whatsapp/webhook"
            query = {"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1"}
            with httpx.Client(timeout=2) as client:
                webhook = client.get(url, params=query).status_code == 200
            return (
                webhook
                and len(telegram.method_calls("getUpdates")) > polls
                and discord.identifies > identifies
                and slack.connections > connections
            )

        def with_all() -> float:
            gw = channel_gateway(cfg, *SECRETS)
            marks = (len(telegram.method_calls("getUpdates")), discord.identifies, slack.connections)
            return idle_rss(gw, args.settle, lambda: all_connected(gw, *marks))

        progress("idle RSS with the four channels, %d starts", args.runs)
        with_channels = [with_all() for _ in range(args.runs)]
    progress("idle RSS without channels, %d starts", args.runs)
    without = [idle_rss(channel_gateway(base_config(), *SECRETS), args.settle) for _ in range(args.runs)]
    result.update(
        idle_rss_mib={"without": round(min(without), 1), "with_all": round(min(with_channels), 1)},
        loadavg_after=list(os.getloadavg()),
    )
    return result


def render(r: dict[str, Any]) -> str:
    rss = r["idle_rss_mib"]
    extra = rss["with_all"] - rss["without"]
    per = extra / 4
    rows = [
        ["idle RSS without channels", f"{rss['without']:.1f} MiB", "", ""],
        ["idle RSS with Telegram, Discord, Slack and WhatsApp", f"{rss['with_all']:.1f} MiB (+{extra:.1f})", "", ""],
        ["per channel", f"+{per:.1f} MiB", "≤ +10 MB", "pass" if per * 1.048576 <= 10 else "**miss**"],
    ]
    lines = markdown_table(["measure", "Homarus", "target", ""], rows)
    lines += machine_footer(r, "")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--settle", type=float, default=3.0, help="seconds after connecting before RSS is read")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    return ap.parse_args(argv)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render))
