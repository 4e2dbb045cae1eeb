"""The persisted gateway token: created 0600, reused, permissions tightened, short tokens refused."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from homarus.errors import ConfigError
from homarus.security.token_store import generate_token, load_or_create_token, read_token


def file_mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_generate_token_is_random_urlsafe() -> None:
    tokens = {generate_token() for _ in range(20)}
    assert len(tokens) == 20
    for token in tokens:
        assert len(token) == 43  # 32 random bytes, base64url without padding
        assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_read_missing_token(tmp_path: Path) -> None:
    assert read_token(tmp_path / "gateway.token") is None


def test_create_then_reuse(tmp_path: Path) -> None:
    path = tmp_path / "state" / "gateway.token"
    token, created = load_or_create_token(path)
    assert created is True
    assert len(token) == 43
    assert path.read_text(encoding="utf-8") == token + "\n"
    assert file_mode(path) == 0o600
    assert file_mode(path.parent) == 0o700
    again, created_again = load_or_create_token(path)
    assert (again, created_again) == (token, False)
    assert read_token(path) == token


def test_existing_token_is_stripped_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "gateway.token"
    path.write_text("  hand-made-token-123 \n\n", encoding="utf-8")
    path.chmod(0o600)
    assert load_or_create_token(path) == ("hand-made-token-123", False)
    assert path.read_text(encoding="utf-8") == "  hand-made-token-123 \n\n"  # not rewritten


@pytest.mark.parametrize("loose", [0o644, 0o640, 0o604, 0o660, 0o777])
def test_loose_permissions_are_tightened(tmp_path: Path, loose: int) -> None:
    path = tmp_path / "gateway.token"
    path.write_text("hand-made-token-123\n", encoding="utf-8")
    path.chmod(loose)
    assert read_token(path) == "hand-made-token-123"
    assert file_mode(path) == 0o600


def test_owner_only_modes_are_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "gateway.token"
    path.write_text("hand-made-token-123\n", encoding="utf-8")
    path.chmod(0o400)
    assert read_token(path) == "hand-made-token-123"
    assert file_mode(path) == 0o400


@pytest.mark.parametrize("content", ["", "\n", "short", "1234567", "   abc   \n"])
def test_too_short_stored_token_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "gateway.token"
    path.write_text(content, encoding="utf-8")
    path.chmod(0o600)
    with pytest.raises(ConfigError) as info:
        load_or_create_token(path)
    assert info.value.path == str(path)
    assert info.value.message == f"{path}: stored gateway token is empty or too short; delete it to regenerate"
    assert path.read_text(encoding="utf-8") == content  # never silently replaced


def test_eight_characters_is_enough(tmp_path: Path) -> None:
    path = tmp_path / "gateway.token"
    path.write_text("12345678", encoding="utf-8")
    assert read_token(path) == "12345678"
