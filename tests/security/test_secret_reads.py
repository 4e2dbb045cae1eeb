"""Red team: a client that may only read (``operator.read``) asks for the config, the status and
the health of a gateway whose config holds a secret in every secret-typed field of the schema.
Expected: not one of them comes back in clear (before: MCP ``headers``/``env`` and a model
provider's ``headers`` did), and an echoed sentinel writes the secret back unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from homarus.config.redact import REDACTED, redact, redact_text, secret_fields
from homarus.config.schema import HomarusConfig
from tests.conftest import run_gateway
from tests.wsclient import open_client

GATEWAY_TOKEN = "gw-token-0123456789abcdef"


def s(name: str) -> str:
    """A distinct, recognisable secret per field (long enough for every validator)."""
    return f"SeCrEt-{name}-0123456789abcdefXYZ"


#: one value at every secret path of the schema (``secret_fields()``), and the name-based ones
CONFIG: dict[str, Any] = {
    "gateway": {"auth": {"mode": "token", "token": GATEWAY_TOKEN, "password": s("gwpassword")}},
    "agents": {
        "defaults": {
            "memorySearch": {"remote": {"apiKey": s("memkey"), "headers": {"Authorization": s("memheader")}}},
            "sandbox": {"docker": {"env": {"GITHUB_TOKEN": s("sandboxenv")}}},
        }
    },
    "channels": {
        "telegram": {
            "enabled": False,
            "botToken": s("bot"),
            "webhookSecret": "Whsec0123456789abcdefXYZ",
            "accounts": {
                "second": {"enabled": False, "botToken": s("bot2"), "webhookSecret": "Whsec2222222222abcdefXYZ"}
            },
        },
        "discord": {"enabled": False, "token": s("discord"), "accounts": {"ops": {"token": s("discord2")}}},
        "slack": {
            "enabled": False,
            "botToken": s("slackbot"),
            "appToken": s("slackapp"),
            "signingSecret": s("slacksign"),
            "accounts": {
                "ops": {"botToken": s("slackbot2"), "appToken": s("slackapp2"), "signingSecret": s("slacksign2")}
            },
        },
        "whatsapp": {
            "enabled": False,
            "accessToken": s("waaccess"),
            "appSecret": s("wasecret"),
            "verifyToken": s("waverify"),
            "accounts": {
                "shop": {
                    "accessToken": s("waaccess2"),
                    "appSecret": s("wasecret2"),
                    "verifyToken": s("waverify2"),
                    "webhookPath": "/wa/shop",
                }
            },
        },
    },
    "cron": {"webhookToken": s("cronhook")},
    "hooks": {"token": s("hooks")},
    "mcp": {
        "servers": {
            "fs": {"command": "/bin/true", "env": {"API_KEY": s("mcpenv")}},
            "remote": {"url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer " + s("mcpheader")}},
        }
    },
    "models": {
        "providers": {
            "corp": {
                "api": "openai-completions",
                "baseUrl": "https://user:" + s("urlpassword") + "@llm.example/v1",
                "apiKey": s("providerkey"),
                "headers": {"X-Api-Token": s("providerheader")},
                "models": [{"id": "m"}],
            }
        }
    },
    "skills": {"entries": {"weather": {"env": {"WEATHER_KEY": s("skillenv")}}}},
    # the URL a PostgreSQL backend would use (the backend stays embedded: no database is reached)
    "storage": {"postgres": {"url": "postgresql://homarus:" + s("pgpassword") + "@db.example/homarus"}},
    "tools": {"web": {"search": {"apiKey": s("searchkey")}}},
}
SECRETS = [
    GATEWAY_TOKEN,
    "Whsec0123456789abcdefXYZ",
    "Whsec2222222222abcdefXYZ",
    *(s(n) for n in ("gwpassword", "memkey", "memheader", "sandboxenv", "bot", "bot2", "cronhook", "hooks")),
    *(s(n) for n in ("discord", "discord2")),
    *(s(n) for n in ("slackbot", "slackapp", "slacksign", "slackbot2", "slackapp2", "slacksign2")),
    *(s(n) for n in ("waaccess", "wasecret", "waverify", "waaccess2", "wasecret2", "waverify2")),
    *(s(n) for n in ("mcpenv", "mcpheader", "urlpassword", "providerkey", "providerheader", "skillenv", "searchkey")),
    s("pgpassword"),
]


def _at(data: Any, path: list[str]) -> bool:
    """Whether ``data`` has a value at ``path`` (``*``: any key or item)."""
    if not path:
        return True
    head, rest = path[0], path[1:]
    if head == "*":
        items = data.values() if isinstance(data, dict) else data if isinstance(data, list) else []
        return any(_at(v, rest) for v in items)
    return isinstance(data, dict) and head in data and _at(data[head], rest)


def test_the_sample_config_sets_every_secret_field_of_the_schema() -> None:
    """A secret field added to the schema fails here until the sample below carries it too."""
    paths = secret_fields()
    assert "mcp.servers.*.headers.*" in paths and "channels.telegram.accounts.*.botToken" in paths
    missing = [p for p in paths if not _at(CONFIG, p.split("."))]
    assert missing == []
    HomarusConfig.model_validate(CONFIG)  # and it is a valid config


def test_redaction_masks_every_secret_path_and_the_raw_text() -> None:
    dumped = json.dumps(redact(CONFIG))
    assert [x for x in SECRETS if x in dumped] == []
    raw = json.dumps(CONFIG, indent=2)
    assert [x for x in SECRETS if x in redact_text(raw, CONFIG)] == []


async def test_a_read_only_client_reads_no_secret_anywhere(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG, token=None) as gw:
        client = await open_client(gw.url)
        assert (await client.handshake(GATEWAY_TOKEN, scopes=["operator.read"]))["ok"]
        answers = {m: await client.request(m, {}) for m in ("config.get", "status", "health", "mcp.status")}
        for method, answer in answers.items():
            text = json.dumps(answer)
            assert [x for x in SECRETS if x in text] == [], method
        got = answers["config.get"]["payload"]
        assert got["config"]["mcp"]["servers"]["remote"]["headers"]["Authorization"] == REDACTED
        assert got["parsed"]["models"]["providers"]["corp"]["headers"]["X-Api-Token"] == REDACTED
        assert REDACTED in got["raw"]
        # an admin echoing the sentinels back changes nothing that was secret
        admin = await open_client(gw.url)
        assert (await admin.handshake(GATEWAY_TOKEN, scopes=["operator.admin"]))["ok"]
        patch = {"mcp": got["parsed"]["mcp"], "models": got["parsed"]["models"], "session": {"mainKey": "home"}}
        res = await admin.request("config.patch", {"raw": json.dumps(patch), "baseHash": got["hash"]})
        assert res["ok"], res
        stored = json.loads(gw.paths.config_path.read_text())
        assert stored["mcp"] == CONFIG["mcp"] and stored["models"] == CONFIG["models"]
