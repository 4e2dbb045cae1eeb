"""Programs the sandbox escape tests run inside a sandbox (with ``python3 -c "$P"``)."""

from __future__ import annotations

#: forks until refused, the children sleeping ``{sleep}`` s; prints ``refused <errno>`` then the count
FORK_BOMB = (
    "import os, time\n"
    "n = 0\n"
    "try:\n"
    "    for _ in range(500):\n"
    "        if os.fork() == 0:\n"
    "            time.sleep({sleep}); os._exit(0)\n"
    "        n += 1\n"
    "except OSError as e: print('refused', e.errno)\n"
    "print(n)\n"
)
