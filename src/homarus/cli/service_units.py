"""The gateway as a background service: the systemd user unit (Linux) and the launchd agent
(macOS) that ``homarus gateway install`` writes.

Both run ``homarus gateway run`` from the install that wrote them (its absolute path, so a
virtualenv needs no activation), with the state dir and config path of the installing shell,
restart it when it fails (not when it is stopped on purpose), and keep its umask private. The
unit starts with the user's session and, once lingering is enabled, at boot without a login.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple

__all__ = ["LABEL", "UNIT_NAME", "ServiceSpec", "launchd_plist", "systemd_unit"]

UNIT_NAME = "homarus-gateway.service"
LABEL = "ai.homarus.gateway"


class ServiceSpec(NamedTuple):
    #: the ``homarus`` executable, absolute
    program: str
    state_dir: Path
    config_path: Path | None
    port: int | None = None

    @classmethod
    def current(cls, state_dir: Path, config_path: Path | None, port: int | None = None) -> ServiceSpec:
        """For this install: the ``homarus`` next to the running Python (a virtualenv's bin)."""
        program = Path(sys.executable).parent / "homarus"
        if not program.exists():
            found = [Path(p) / "homarus" for p in os.environ.get("PATH", "").split(os.pathsep) if p]
            program = next((p for p in found if p.exists()), program)
        return cls(str(program.absolute()), state_dir.absolute(), config_path, port)

    def argv(self) -> list[str]:
        return [self.program, "gateway", "run", *(["--port", str(self.port)] if self.port is not None else [])]

    def env(self) -> dict[str, str]:
        env = {"HOMARUS_STATE_DIR": str(self.state_dir)}
        if self.config_path is not None:
            env["HOMARUS_CONFIG"] = str(self.config_path.absolute())
        bin_dir = str(Path(self.program).parent)
        env["PATH"] = os.pathsep.join(dict.fromkeys([bin_dir, "/usr/local/bin", "/usr/bin", "/bin"]))
        env["PYTHONUNBUFFERED"] = "1"  # log lines reach the journal as they are written
        return env


def _quote(word: str) -> str:
    """A word of an ``ExecStart=`` line (systemd's own quoting: double quotes, backslash escapes)."""
    if word and all(c.isalnum() or c in "/._-:=+@," for c in word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") + '"'


def systemd_unit(spec: ServiceSpec) -> str:
    env_lines = "\n".join(f"Environment={_quote(f'{k}={v}')}" for k, v in spec.env().items())
    return f"""# Written by `homarus gateway install`; `homarus gateway uninstall` removes it.
[Unit]
Description=Homarus gateway (personal AI assistant)
After=network-online.target
Wants=network-online.target
StartLimitIntervalSec=300
StartLimitBurst=10

[Service]
Type=simple
ExecStart={" ".join(_quote(w) for w in spec.argv())}
{env_lines}
WorkingDirectory={_quote(str(spec.state_dir))}
Restart=on-failure
RestartSec=5
TimeoutStopSec=30
KillMode=mixed
UMask=0077

[Install]
WantedBy=default.target
"""


def launchd_plist(spec: ServiceSpec, log_path: Path) -> str:
    from xml.sax.saxutils import escape  # pulls in urllib: only when a plist is written

    args = "\n".join(f"      <string>{escape(a)}</string>" for a in spec.argv())
    env = "\n".join(f"      <key>{escape(k)}</key>\n      <string>{escape(v)}</string>" for k, v in spec.env().items())
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
  <dict>
    <key>Label</key>
    <string>{LABEL}</string>
    <key>ProgramArguments</key>
    <array>
{args}
    </array>
    <key>EnvironmentVariables</key>
    <dict>
{env}
    </dict>
    <key>WorkingDirectory</key>
    <string>{escape(str(spec.state_dir))}</string>
    <key>RunAtLoad</key>
    <true/>
    <key>KeepAlive</key>
    <dict>
      <key>SuccessfulExit</key>
      <false/>
    </dict>
    <key>ThrottleInterval</key>
    <integer>5</integer>
    <key>Umask</key>
    <integer>63</integer>
    <key>StandardOutPath</key>
    <string>{escape(str(log_path))}</string>
    <key>StandardErrorPath</key>
    <string>{escape(str(log_path))}</string>
  </dict>
</plist>
"""
