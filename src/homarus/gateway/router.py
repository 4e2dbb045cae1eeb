"""Method registry and dispatch: name → (scope, params model, handler).

Core and plugins register into the same registry; a second registration of a name is an
error naming both owners, never a silent override. Core methods are registered lazily
(:class:`LazyMethod`): name and scope up front, the handler module imported on the first call.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from homarus.errors import InvalidRequest, RegistrationError
from homarus.gateway.client import ClientInfo
from homarus.protocol.compat import check_unsupported
from homarus.protocol.original_methods import not_supported_reason
from homarus.protocol.validation import format_errors
from homarus.security.scopes import ADMIN, RESERVED_ADMIN_PREFIXES, require_scope

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = [
    "AnyParams",
    "EmptyParams",
    "LazyMethod",
    "MethodCall",
    "MethodRegistry",
    "MethodSpec",
    "Params",
    "not_supported",
]

Handler = Callable[["MethodCall", Any], Awaitable[Any]]


def not_supported(method: str, reason: str) -> InvalidRequest:
    """The answer to what the original does and Homarus does not: the truth, with the reason."""
    return InvalidRequest(
        f"not supported by Homarus: {reason} ({method})",
        details={"code": "NOT_SUPPORTED", "method": method, "reason": reason},
    )


class Params(BaseModel):
    """Base for method parameter models: closed objects, no type coercion."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False)


class EmptyParams(Params):
    pass


class AnyParams(BaseModel):
    """For methods that look at their params themselves (or not at all)."""

    model_config = ConfigDict(extra="allow")


@dataclass(slots=True)
class MethodCall:
    """One request being handled: who asked, what for, and the gateway that serves it."""

    gateway: GatewayContext
    client: ClientInfo
    request_id: str
    method: str
    #: send a first ``res`` now (e.g. ``accepted``); the handler's return value is the final one
    early: Callable[[Any], None] | None = None

    def ack(self, payload: Any) -> None:
        if self.early is not None:
            self.early(payload)


@dataclass(frozen=True, slots=True)
class MethodSpec:
    name: str
    scope: str | None
    handler: Handler
    params: type[BaseModel] = EmptyParams
    owner: str = "core"
    advertised: bool = True
    roles: tuple[str, ...] = field(default=("operator",))


@dataclass(frozen=True, slots=True)
class LazyMethod:
    """A method known by name and scope; ``target`` (``package.module:function``) and the params
    model (a class name in that module) are imported on the first call."""

    name: str
    target: str
    scope: str | None
    params: str | None = None
    advertised: bool = True
    roles: tuple[str, ...] = ("operator",)

    def load(self) -> MethodSpec:
        module_name, _, attr = self.target.partition(":")
        module = importlib.import_module(module_name)
        params = getattr(module, self.params) if self.params else EmptyParams
        return MethodSpec(self.name, self.scope, getattr(module, attr), params, "core", self.advertised, self.roles)


class MethodRegistry:
    def __init__(self) -> None:
        self._specs: dict[str, MethodSpec | LazyMethod] = {}

    def register(
        self,
        name: str,
        handler: Handler,
        *,
        scope: str | None,
        params: type[BaseModel] = EmptyParams,
        owner: str = "core",
        advertised: bool = True,
        roles: tuple[str, ...] = ("operator",),
    ) -> MethodSpec:
        if not name or name != name.strip():
            raise RegistrationError(f"invalid method name {name!r}")
        if owner != "core" and name.startswith(RESERVED_ADMIN_PREFIXES):
            scope = ADMIN  # reserved namespaces stay admin-only whatever a plugin declares
        spec = MethodSpec(name, scope, handler, params, owner, advertised, roles)
        self._add(spec, owner)
        return spec

    def register_lazy(self, method: LazyMethod) -> None:
        """A core method whose module is imported on its first call."""
        self._add(method, "core")

    def _add(self, spec: MethodSpec | LazyMethod, owner: str) -> None:
        if spec.name in self._specs:
            prior = self._owner(self._specs[spec.name])
            raise RegistrationError(
                f"method {spec.name!r} is already registered by {prior!r}; {owner!r} cannot register it again",
                details={"method": spec.name, "owner": prior, "conflictingOwner": owner},
            )
        self._specs[spec.name] = spec

    @staticmethod
    def _owner(spec: MethodSpec | LazyMethod) -> str:
        return spec.owner if isinstance(spec, MethodSpec) else "core"

    def get(self, name: str) -> MethodSpec | None:
        """The method ``name`` with its handler (importing it now if it was registered lazily)."""
        spec = self._specs.get(name)
        if isinstance(spec, LazyMethod):
            spec = self._specs[name] = spec.load()
        return spec

    def names(self) -> list[str]:
        return sorted(self._specs)

    def advertised(self) -> list[str]:
        return sorted(n for n, s in self._specs.items() if s.advertised)

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    async def dispatch(self, call: MethodCall, params: Any) -> Any:
        """Authorize, validate and run one call; raises HomarusError subclasses on refusal."""
        known = self._specs.get(call.method)
        client = call.client
        if known is None and (reason := not_supported_reason(call.method)) is not None:
            # the original's method that Homarus has not built: the truth at any scope, not the
            # "missing scope: operator.admin" an unknown name gets
            raise not_supported(call.method, reason)
        if call.method != "health":
            roles = known.roles if known is not None else ("operator",)
            if client.role not in roles:
                raise InvalidRequest(f"unauthorized role: {client.role}")
            if client.role == "operator":
                require_scope(call.method, known.scope if known else None, client.scopes)
        spec = self.get(call.method)  # authorised first: an unauthorised caller imports nothing
        if spec is None:
            raise InvalidRequest(f"unknown method: {call.method}")
        try:
            parsed = spec.params.model_validate({} if params is None else params)
        except ValidationError as exc:
            raise InvalidRequest(f"invalid {call.method} params: {format_errors(exc)}") from None
        check_unsupported(call.method, parsed)
        return await spec.handler(call, parsed)
