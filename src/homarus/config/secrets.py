"""The state dir's secrets file, ``$STATE/secrets.env`` (0600): ``NAME=value`` lines.

The onboarding wizard stores a model key there and writes ``"${NAME}"`` into the config, so the
config file can be shown, diffed, backed up and shared without the key in it. The file's names
are read as if they were environment variables (the real environment wins), for ``${NAME}``
references and for the ``<PROVIDER>_API_KEY`` fallback. A file others can read is refused.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from homarus.errors import ConfigError
from homarus.fs import atomic_write

__all__ = ["SECRETS_FILE", "merged_env", "read_secrets", "write_secret"]

SECRETS_FILE = "secrets.env"
_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")


def read_secrets(state_dir: Path) -> dict[str, str]:
    path = state_dir / SECRETS_FILE
    try:
        st = path.stat()
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", path=str(path)) from None
    if st.st_mode & 0o077:
        raise ConfigError(f"others can read it (mode {oct(st.st_mode & 0o777)}): chmod 600 it", path=str(path))
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if not sep or not _NAME.match(name.strip()):
            raise ConfigError(f"line {n}: expected NAME=value", path=str(path))
        out[name.strip()] = value.strip()
    return out


def write_secret(state_dir: Path, name: str, value: str) -> None:
    """Set ``name`` (replacing an earlier value), keeping the other lines and comments."""
    if not _NAME.match(name):
        raise ConfigError(f"{name!r} is not a NAME (capitals, digits and _)")
    if "\n" in value or "\r" in value or "\0" in value:
        raise ConfigError("a secret is one line")
    path = state_dir / SECRETS_FILE
    read_secrets(state_dir)  # refuse to extend a file with bad lines or loose permissions
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else ["# secrets of homarus: NAME=value"]
    kept = [ln for ln in lines if ln.strip().partition("=")[0].strip() != name]
    atomic_write(path, "\n".join([*kept, f"{name}={value}"]) + "\n", mode=0o600)


def merged_env(state_dir: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The secrets file under the process environment (which wins)."""
    return {**read_secrets(state_dir), **(os.environ if env is None else env)}
