"""The lazy services: listed once (GatewayServices), one builder for each."""

from __future__ import annotations

from homarus.gateway.context import GatewayContext, GatewayServices
from homarus.gateway.services.build import SERVICES, LazyServices


def test_every_declared_service_has_a_builder_and_the_context_has_them() -> None:
    declared = set(GatewayServices.__annotations__)
    assert len(declared) == 26 and declared == set(SERVICES)
    assert issubclass(GatewayContext, GatewayServices)
    assert not [name for name in declared if name in LazyServices.__dict__]  # built, never preset


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
