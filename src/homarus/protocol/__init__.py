"""Sans-I/O gateway protocol: frames, validation messages, the connect handshake.

Nothing here touches a socket or an event loop; the gateway edge feeds text in and sends
what comes out.
"""

from __future__ import annotations
