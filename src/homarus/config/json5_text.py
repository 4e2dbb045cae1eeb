"""JSON5 text (the config file, plugin manifests, model catalogs) read with the standard library's
JSON parser first.

Most such files are plain JSON, which JSON5 extends without changing its meaning (the same
values, the last of duplicate keys kept), so :func:`loads` asks the C parser of ``json`` and hands
only what it refuses (comments, trailing commas, unquoted keys) to ``json5``. A gateway whose files
are plain JSON never imports ``json5`` (0.5 MiB and 2 ms of its start, measured on the host of
``bench/RESULTS.md``), and reads them faster.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["loads"]


def loads(text: str) -> Any:
    """``text`` parsed as JSON5; raises ``ValueError`` as ``json5.loads`` does when it is not."""
    try:
        return json.loads(text)
    except ValueError:
        import json5  # only for what plain JSON does not allow

        return json5.loads(text)
