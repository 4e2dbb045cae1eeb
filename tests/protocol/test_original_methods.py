"""The original's method list and the reasons given for the ones Homarus has not built."""

from __future__ import annotations

from homarus.gateway.methods import CORE_METHODS
from homarus.protocol.original_methods import GENERIC, REASONS, UNADVERTISED, not_supported_reason, original_methods


def test_the_list_is_the_originals_advertised_one() -> None:
    # 2026.9.6's hello-ok advertises 466 methods; a few every client uses are in it
    assert len(original_methods()) == 466
    assert {"health", "agent", "chat.send", "message.action", "usage.cost", "cron.get"} <= original_methods()


def test_every_reason_prefix_is_reachable_and_the_fallback_is_last() -> None:
    assert REASONS[-1] == ("", GENERIC)
    for prefix, _reason in REASONS[:-1]:
        assert any(m == prefix or m.startswith(prefix) for m in original_methods() | UNADVERTISED), prefix


def test_a_method_the_original_answers_without_advertising_it_gets_its_reason() -> None:
    assert "device.pair.setupCode" not in original_methods()  # its CLI calls it (devices join-code)
    assert "nodes" in (not_supported_reason("device.pair.setupCode") or "")


def test_names_outside_the_originals_list_get_no_reason() -> None:
    assert not_supported_reason("no.such.thing") is None
    assert not_supported_reason("") is None


def test_families_get_their_own_reason_not_the_generic_one() -> None:
    assert "single-user" in (not_supported_reason("users.self") or "")
    assert "voice" in (not_supported_reason("talk.mode") or "")
    assert "GitHub" in (not_supported_reason("users.github.status") or "")  # before "users."


def test_unbuilt_methods_of_the_original_are_mostly_explained() -> None:
    """Most of what the original has and Homarus does not gets a family's reason, not the generic one."""
    ours = {m.name for m in CORE_METHODS}
    missing = sorted(original_methods() - ours)
    generic = [m for m in missing if not_supported_reason(m) == GENERIC]
    assert len(generic) < len(missing) // 3, generic
