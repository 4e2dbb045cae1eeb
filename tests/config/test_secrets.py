"""The state dir's secrets file: NAME=value lines read under the real environment, written 0600
with other lines kept, refused when others can read it or when a line is not NAME=value; a
config's ``${NAME}`` resolves from it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from homarus.config.loader import StatePaths, load_config
from homarus.config.secrets import merged_env, read_secrets, write_secret
from homarus.errors import ConfigError


def test_write_keeps_other_lines_and_replaces_the_name(tmp_path: Path) -> None:
    write_secret(tmp_path, "OPENAI_API_KEY", "sk-1")
    write_secret(tmp_path, "OTHER_TOKEN", "t")
    write_secret(tmp_path, "OPENAI_API_KEY", "sk-2")
    path = tmp_path / "secrets.env"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert read_secrets(tmp_path) == {"OTHER_TOKEN": "t", "OPENAI_API_KEY": "sk-2"}
    assert path.read_text().startswith("# secrets of homarus")
    assert merged_env(tmp_path, {"OPENAI_API_KEY": "from-env"})["OPENAI_API_KEY"] == "from-env"  # the env wins
    with pytest.raises(ConfigError, match="one line"):
        write_secret(tmp_path, "X", "a\nb")
    with pytest.raises(ConfigError, match="not a NAME"):
        write_secret(tmp_path, "lower", "v")


def test_loose_or_broken_files_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "secrets.env"
    path.write_text("A=1\n")
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_secrets(tmp_path)
    os.chmod(path, 0o600)
    path.write_text("A=1\nnot a line\n")
    with pytest.raises(ConfigError, match="line 2"):
        read_secrets(tmp_path)


def test_a_config_reference_resolves_from_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCAL_LLM_KEY", raising=False)
    write_secret(tmp_path, "LOCAL_LLM_KEY", "sk-local")
    (tmp_path / "homarus.json").write_text('{ models: { providers: { l: { apiKey: "${LOCAL_LLM_KEY}" } } } }')
    cfg = load_config(StatePaths(tmp_path, tmp_path / "homarus.json")).config
    key = cfg.models.providers["l"].api_key
    assert key is not None and key.get_secret_value() == "sk-local"
