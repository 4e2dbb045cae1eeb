"""`python -m homarus` runs the command line."""

from __future__ import annotations

from homarus.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
