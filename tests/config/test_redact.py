"""Secret redaction of config objects and raw text, and restoring echoed sentinels."""

from __future__ import annotations

from typing import Any

import pytest

from homarus.config.redact import REDACTED, is_sensitive_key, redact, redact_text, restore_redacted


def test_sentinel_value() -> None:
    assert REDACTED == "__HOMARUS_REDACTED__"


@pytest.mark.parametrize(
    "key",
    [
        "token",
        "Token",
        "TOKEN",
        "bootstrapToken",
        "password",
        "passwords",
        "secret",
        "clientSecret",
        "apiKey",
        "api_key",
        "api-key",
        "APIKEY",
        "privateKey",
        "private_key",
        "credential",
        "credentials",
        "webhookToken",
    ],
)
def test_sensitive_keys(key: str) -> None:
    assert is_sensitive_key(key) is True


@pytest.mark.parametrize(
    "key",
    [
        "port",
        "tokenizer",
        "passwordFile",
        "secretRef",
        "apiKeyEnv",
        "mode",
        "id",
        "name",
        "keys",
        "",
        "tokens",
        "maxTokens",
        "contextTokens",
    ],
)
def test_non_sensitive_keys(key: str) -> None:
    assert is_sensitive_key(key) is False


def test_redact_nested() -> None:
    value = {
        "gateway": {"port": 1, "auth": {"mode": "token", "token": "t-123456789", "password": "p-123456789"}},
        "providers": [{"id": "a", "apiKey": "sk-1"}, {"id": "b", "apiKey": None}],
    }
    assert redact(value) == {
        "gateway": {"port": 1, "auth": {"mode": "token", "token": REDACTED, "password": REDACTED}},
        "providers": [{"id": "a", "apiKey": REDACTED}, {"id": "b", "apiKey": None}],
    }


def test_redact_keeps_empty_and_none_visible() -> None:
    assert redact({"token": "", "password": None}) == {"token": "", "password": None}


def test_redact_recurses_into_sensitive_dict() -> None:
    # a dict under a sensitive name is a container (e.g. a SecretRef), not itself a secret
    assert redact({"secret": {"source": "env", "id": "X", "token": "abc"}}) == {
        "secret": {"source": "env", "id": "X", "token": REDACTED}
    }


def test_redact_non_string_secret_values() -> None:
    assert redact({"apiKey": ["a", "b"], "secret": 12345}) == {"apiKey": REDACTED, "secret": REDACTED}


def test_redact_does_not_mutate() -> None:
    value = {"auth": {"token": "abc"}}
    out = redact(value)
    assert value == {"auth": {"token": "abc"}}
    assert out is not value


@pytest.mark.parametrize("value", [1, "token", None, True, [1, "x"]])
def test_redact_scalars_and_plain_lists(value: Any) -> None:
    assert redact(value) == value


# --- restore_redacted ------------------------------------------------------------------------


def test_restore_puts_current_secret_back() -> None:
    current = {"gateway": {"auth": {"token": "real-token-1", "mode": "token"}, "port": 1}}
    new = {"gateway": {"auth": {"token": REDACTED, "mode": "password"}, "port": 2}}
    assert restore_redacted(new, current) == {
        "gateway": {"auth": {"token": "real-token-1", "mode": "password"}, "port": 2}
    }


def test_restore_keeps_new_secret_when_changed() -> None:
    current = {"auth": {"token": "old-token-1"}}
    assert restore_redacted({"auth": {"token": "new-token-2"}}, current) == {"auth": {"token": "new-token-2"}}


def test_restore_drops_sentinel_with_nothing_to_restore() -> None:
    assert restore_redacted({"auth": {"token": REDACTED, "mode": "none"}}, {"auth": {}}) == {"auth": {"mode": "none"}}
    assert restore_redacted({"auth": {"token": REDACTED}}, None) == {"auth": {}}
    assert restore_redacted({"token": REDACTED}, "not a dict") == {}


def test_restore_in_lists_by_position() -> None:
    current = {"providers": [{"id": "a", "apiKey": "k-a"}, {"id": "b", "apiKey": "k-b"}]}
    new = {
        "providers": [{"id": "a", "apiKey": REDACTED}, {"id": "b", "apiKey": REDACTED}, {"id": "c", "apiKey": REDACTED}]
    }
    assert restore_redacted(new, current) == {
        "providers": [{"id": "a", "apiKey": "k-a"}, {"id": "b", "apiKey": "k-b"}, {"id": "c"}]
    }


def test_restore_round_trips_redact() -> None:
    current = {"gateway": {"auth": {"token": "t-123456789", "password": "p-123456789"}}, "x": [1, {"secret": "s"}]}
    assert restore_redacted(redact(current), current) == current


def test_restore_leaves_plain_values() -> None:
    assert restore_redacted(5, {"a": 1}) == 5
    assert restore_redacted("x", None) == "x"
    assert restore_redacted([1, 2], [3]) == [1, 2]


def test_restore_does_not_mutate() -> None:
    new = {"auth": {"token": REDACTED}}
    current = {"auth": {"token": "real-token-1"}}
    restore_redacted(new, current)
    assert new == {"auth": {"token": REDACTED}}
    assert current == {"auth": {"token": "real-token-1"}}


# --- redact_text --------------------------------------------------------------------------------


def test_redact_text_replaces_every_occurrence() -> None:
    raw = '{\n  gateway: { auth: { token: "tok-abcdef123" } }, // old: tok-abcdef123\n}'
    parsed = {"gateway": {"auth": {"token": "tok-abcdef123"}}}
    assert redact_text(raw, parsed) == f'{{\n  gateway: {{ auth: {{ token: "{REDACTED}" }} }}, // old: {REDACTED}\n}}'


def test_redact_text_longest_secret_first() -> None:
    parsed = {"auth": {"token": "abc12345", "password": "abc12345-longer"}}
    raw = '{auth: {token: "abc12345", password: "abc12345-longer"}}'
    assert redact_text(raw, parsed) == f'{{auth: {{token: "{REDACTED}", password: "{REDACTED}"}}}}'


def test_redact_text_skips_env_references() -> None:
    raw = '{auth: {token: "${HOMARUS_TOKEN}", password: "pw-12345678"}}'
    parsed = {"auth": {"token": "${HOMARUS_TOKEN}", "password": "pw-12345678"}}
    assert redact_text(raw, parsed) == f'{{auth: {{token: "${{HOMARUS_TOKEN}}", password: "{REDACTED}"}}}}'


def test_redact_text_finds_secrets_in_lists() -> None:
    parsed = {"providers": [{"apiKey": "sk-aaaa"}, {"apiKey": "sk-bbbb"}]}
    raw = '{providers: [{apiKey: "sk-aaaa"}, {apiKey: "sk-bbbb"}]}'
    assert "sk-" not in redact_text(raw, parsed)


def test_redact_text_without_secrets_is_identity() -> None:
    raw = "{gateway: {port: 1}} // token: none"
    assert redact_text(raw, {"gateway": {"port": 1}, "token": ""}) == raw
    assert redact_text(raw, None) == raw
