"""One TLS client context for every outbound HTTPS client of the process.

Each ``httpx.AsyncClient`` builds its own ``SSLContext`` by default and loads the whole CA bundle
into it: about 2.5 MB of resident memory per client. The model providers, the chat channels, the
media fetches and remote embeddings all verify servers the same way, so they share this one (an
``SSLContext`` is safe to share between connections and threads once configured).
"""

from __future__ import annotations

import functools
import ssl

__all__ = ["client_context"]


@functools.cache
def client_context() -> ssl.SSLContext:
    """The verifying client context (certifi's CA bundle, as httpx's default), built once."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())
