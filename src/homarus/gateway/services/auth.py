"""Who may talk to the gateway: the shared secret, the failed-auth limiter, the bind policy.

One object serves the WebSocket handshake and every authenticated HTTP surface, so a guess
counted on one is counted on all. The secret comes from ``--token``/``HOMARUS_GATEWAY_TOKEN``,
``gateway.auth.token`` (or ``password``), or a token generated into the state dir (0600).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from homarus.config.values import is_loopback_host
from homarus.errors import ConfigError
from homarus.security.ratelimit import FailureLimiter
from homarus.security.token_store import load_or_create_token

if TYPE_CHECKING:
    from collections.abc import Callable

    from homarus.config.paths import StatePaths
    from homarus.config.schema import HomarusConfig

__all__ = ["GatewayAuth"]

log = logging.getLogger("homarus.gateway")


class GatewayAuth:
    def __init__(self, config: Callable[[], HomarusConfig], paths: StatePaths, token_override: str | None) -> None:
        self._config = config
        self._paths = paths
        self._token_override = token_override
        #: True when this start generated the token file
        self.token_created = False
        limit = config().gateway.auth.rate_limit
        self.limiter = FailureLimiter(limit.max_attempts, limit.window_ms / 1000, limit.lockout_ms / 1000)
        self._secret = self._resolve()

    @property
    def mode(self) -> str:
        return self._config().gateway.auth.mode

    @property
    def shared_secret(self) -> str | None:
        """The token or password clients must present (never logged)."""
        return self._secret

    def limited(self, ip: str) -> bool:
        """Whether failures from ``ip`` count (loopback only when ``exemptLoopback`` is off)."""
        limit = self._config().gateway.auth.rate_limit
        return not (limit.exempt_loopback and is_loopback_host(ip))

    def refresh(self) -> bool:
        """Re-read the secret after a config change; True when it changed."""
        previous, self._secret = self._secret, self._resolve()
        return previous != self._secret

    def check_bind_policy(self, host: str) -> None:
        """Refuse to expose an unauthenticated gateway beyond this machine."""
        if self.mode == "none" and not is_loopback_host(host):
            raise ConfigError(
                f"refusing to bind {host} with gateway.auth.mode 'none'; use a token or bind loopback",
                key="gateway.bind",
            )

    def _resolve(self) -> str | None:
        auth = self._config().gateway.auth
        if auth.mode == "none":
            return None
        if auth.mode == "password":
            return auth.password.get_secret_value() if auth.password else None
        if self._token_override:
            return self._token_override
        if auth.token is not None:
            return auth.token.get_secret_value()
        token, created = load_or_create_token(self._paths.token_path)
        self.token_created = self.token_created or created
        return token
