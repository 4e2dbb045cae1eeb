"""One TLS client context for every outbound HTTPS client of the process.

Each ``httpx.AsyncClient`` builds its own ``SSLContext`` by default and loads the whole CA bundle
into it: about 2.5 MB of resident memory per client. The model providers, the chat channels, the
media fetches and remote embeddings all verify servers the same way, so they share this one (an
``SSLContext`` is safe to share between connections and threads once configured).
"""

from __future__ import annotations

import functools
import ssl

__all__ = ["client_context", "context_for"]


@functools.cache
def client_context() -> ssl.SSLContext:
    """The verifying client context (certifi's CA bundle, as httpx's default), built once."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def context_for(base_url: str) -> ssl.SSLContext:
    """The context for a client that only talks to ``base_url``: the verifying one for HTTPS; for a
    plain-HTTP base (a local model server, a test double) one that trusts no CA at all, so that
    loading the CA bundle (tens of milliseconds and ~2.5 MB on the first turn) is skipped and an
    unexpected HTTPS hop still fails closed instead of going unverified."""
    if not base_url.lower().startswith("http://"):
        return client_context()
    return _trust_nothing()


@functools.cache
def _trust_nothing() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # hostname check and CERT_REQUIRED, no CA loaded
