"""A linking code as a QR image: a PNG data URL (what the Control UI shows) and text for a terminal.

Drawn by ``segno`` (pure Python, no imaging library), which comes with the channels that link by
QR code (the ``whatsapp-personal`` extra); imported on first use.
"""

from __future__ import annotations

import base64
import functools
import io

__all__ = ["QrUnavailable", "data_url", "terminal"]

#: the original's Control UI refuses a longer ``qrDataUrl``
MAX_DATA_URL = 16_384


class QrUnavailable(RuntimeError):
    pass


def _qr(code: str) -> object:
    try:
        import segno
    except ImportError:
        raise QrUnavailable("QR codes need segno: pip install 'homarus[whatsapp-personal]'") from None
    return segno.make_qr(code, error="l")


@functools.lru_cache(maxsize=4)
def data_url(code: str) -> str:
    """``data:image/png;base64,...`` of the code, small enough for the original's Control UI (drawn
    once per code, however many clients wait for it)."""
    qr = _qr(code)
    for scale in (6, 4, 3, 2):
        buf = io.BytesIO()
        qr.save(buf, kind="png", scale=scale, border=2)  # type: ignore[attr-defined]
        url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
        if len(url) <= MAX_DATA_URL:
            return url
    raise QrUnavailable("the linking code is too long for a QR image")


def terminal(code: str) -> str:
    """The code drawn with block characters, two rows per line (for a terminal)."""
    buf = io.StringIO()
    _qr(code).terminal(out=buf, compact=True, border=2)  # type: ignore[attr-defined]
    return buf.getvalue()
