"""Secrets never reach a log line: registered values and bot-token shapes are masked at the source.

Some platforms put the credential in the URL path (Telegram's ``/bot<token>/``), and HTTP client
libraries log request URLs (httpx at INFO). Rather than trust every logger and handler to be
configured right, :func:`protect` installs a log-record factory once: any record whose message
holds a registered secret or a Telegram bot token has it replaced by ``<redacted>`` before any
handler, formatter or test capture sees it. Records without one are passed through untouched (the
check is a substring scan).
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any, Final

__all__ = ["REDACTED", "protect", "redact_secrets"]

REDACTED: Final = "<redacted>"
#: a Telegram bot token: ``<bot id>:<35 url-safe characters>``
_BOT_TOKEN: Final = re.compile(r"\b\d{5,16}:[A-Za-z0-9_-]{30,64}\b")

_formatter = logging.Formatter()
_lock = threading.Lock()
_secrets: set[str] = set()
_installed = False


def redact_secrets(text: str) -> str:
    """``text`` with every registered secret and bot-token shape masked."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _BOT_TOKEN.sub(REDACTED, text) if ":" in text else text


def protect(*secrets: str) -> None:
    """Mask ``secrets`` (at least 8 characters; shorter ones would mask ordinary words) in every log
    record from now on; the first call installs the record factory."""
    global _installed
    with _lock:
        _secrets.update(s for s in secrets if isinstance(s, str) and len(s) >= 8)
        if _installed:
            return
        _installed = True
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            try:
                message = record.getMessage()
            except Exception:  # a broken format string: leave it to logging's own error path
                return record
            cleaned = redact_secrets(message)
            if cleaned != message:
                record.msg, record.args = cleaned, None
            if record.exc_info and record.exc_info[1] is not None:
                # formatters use exc_text when it is set: format the traceback now, masked
                record.exc_text = redact_secrets(_formatter.formatException(record.exc_info))
            return record

        logging.setLogRecordFactory(factory)
