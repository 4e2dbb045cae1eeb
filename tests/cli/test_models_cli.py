"""`homarus models list|set|fallbacks|test` on a config whose provider is a loopback fake: the
list with context windows and tags (and what the provider offers, with --discover), picking the
default and fallbacks through validated writes, a real round trip, and one clear sentence for a
provider that is not configured, a refused key or a model it does not have."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import json5

from tests.fakes.llm_server import HttpError, run_fake_llm


def _models(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("HOMARUS_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "homarus", "models", *args],
        env={**env, "HOMARUS_STATE_DIR": str(state)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _config(state: Path, base_url: str, key: str = "sk-m") -> None:
    state.mkdir(parents=True, exist_ok=True)
    (state / "secrets.env").write_text(f"LOCAL_API_KEY={key}\n")
    os.chmod(state / "secrets.env", 0o600)
    cfg = {
        "models": {
            "providers": {
                "local": {
                    "baseUrl": base_url,
                    "apiKey": "${LOCAL_API_KEY}",
                    "models": [{"id": "m-one", "contextWindow": 32000, "maxTokens": 2048}],
                }
            }
        },
        "agents": {"defaults": {"model": "local/m-one"}},
    }
    (state / "homarus.json").write_text(json.dumps(cfg))


def test_list_set_fallbacks_and_test(tmp_path: Path) -> None:
    with run_fake_llm(("m-one", "m-two", "m-three")) as llm:
        llm.required_key = "sk-m"
        _config(tmp_path, llm.base_url)
        listed = _models(tmp_path, "list")
        assert listed.returncode == 0, listed.stderr
        assert [line.split()[0] for line in listed.stdout.splitlines()] == ["homarus/echo", "local/m-one"]
        assert "32,000  default" in listed.stdout
        found = json.loads(_models(tmp_path, "list", "--discover", "--json").stdout)
        offered = {r["ref"]: r["tags"] for r in found["models"] if not r["configured"]}
        assert offered == {"local/m-three": ["offered"], "local/m-two": ["offered"]}

        assert _models(tmp_path, "set", "local/m-two").returncode == 0
        data = json5.loads((tmp_path / "homarus.json").read_text())
        assert data["agents"]["defaults"]["model"]["primary"] == "local/m-two"
        kept = {m["id"]: m for m in data["models"]["providers"]["local"]["models"]}
        assert kept["m-one"]["contextWindow"] == 32000 and "m-two" in kept  # the old entry keeps its fields

        assert _models(tmp_path, "fallbacks", "add", "local/m-one").returncode == 0
        assert _models(tmp_path, "fallbacks", "add", "local/m-three").returncode == 0
        assert _models(tmp_path, "fallbacks", "list").stdout == "1. local/m-one\n2. local/m-three\n"
        again = _models(tmp_path, "fallbacks", "add", "local/m-one")
        assert again.returncode == 1 and "a fallback already" in again.stderr
        assert _models(tmp_path, "fallbacks", "remove", "local/m-one").returncode == 0
        assert _models(tmp_path, "fallbacks", "list").stdout == "1. local/m-three\n"
        assert "fallback 1" in _models(tmp_path, "list").stdout

        tested = _models(tmp_path, "test")
        assert tested.returncode == 0 and tested.stdout.startswith("ok  local/m-two  "), tested.stderr
        assert "tokens in " in tested.stdout
        assert [r.json["model"] for r in llm.requests if r.method == "POST"] == ["m-two"]

        llm.push(HttpError(404, message="The model `m-two` does not exist"))
        missing = _models(tmp_path, "test")
        assert missing.returncode == 1 and "does not have this model" in missing.stderr, missing.stderr


def test_bad_refs_and_keys_get_one_sentence(tmp_path: Path) -> None:
    with run_fake_llm(("m-one",)) as llm:
        llm.required_key = "sk-right"
        _config(tmp_path, llm.base_url, key="sk-wrong")
        refused = _models(tmp_path, "test", "local/m-one")
        assert refused.returncode == 1 and "refused the key" in refused.stderr and "sk-wrong" not in refused.stderr
        discover = _models(tmp_path, "list", "--discover")
        assert discover.returncode == 0 and "local: the provider refused the key" in discover.stderr
    unknown = _models(tmp_path, "set", "nowhere/x")
    assert unknown.returncode == 1 and "no provider 'nowhere'" in unknown.stderr
    bad = _models(tmp_path, "set", "no-slash")
    assert bad.returncode == 1 and "is not <provider>/<model>" in bad.stderr
    gone = _models(tmp_path, "test", "local/m-one")  # the fake server has stopped
    assert gone.returncode == 1 and "Traceback" not in gone.stderr and gone.stderr.count("\n") == 1, gone.stderr
