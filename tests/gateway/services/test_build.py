"""The lazy services: one builder per declared service, and the protocol declares the same names."""

from __future__ import annotations

from homarus.gateway.context import GatewayContext
from homarus.gateway.services.build import SERVICES, LazyServices


def test_every_declared_service_has_a_builder_and_the_protocol_agrees() -> None:
    declared = set(LazyServices.__annotations__)
    assert declared == set(SERVICES)
    protocol = set(GatewayContext.__annotations__)
    assert declared <= protocol, sorted(declared - protocol)


def test_unknown_attribute_is_an_attribute_error_and_built_says_what_exists() -> None:
    class Holder(LazyServices):
        pass

    holder = Holder()
    assert not holder.built("sessions")
    try:
        holder.nope  # type: ignore[attr-defined] # noqa: B018
    except AttributeError as exc:
        assert "nope" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("an unknown name must not be built")
