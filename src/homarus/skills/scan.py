"""Static scan of a staged skill bundle: findings an operator reads before anything is installed.

Malicious skills in the wild hide their payload in a "Prerequisites" or "Setup" section that
tells the user (or the agent) to paste a command: ``curl … | sh``, a base64 blob piped into a
shell, ``sudo``. The scan reads the files as text only; it never runs or imports anything.

Severities: ``critical`` refuses the install unless the operator forces it (``--force``);
``warn`` and ``info`` are reported and stored with the install record. Rules (codes):

- ``executable-file``: an execute bit in the bundle, a shebang, a binary executable (ELF, Mach-O,
  PE) or a shell/batch script by name;
- ``pipe-to-shell``: a download piped into a shell or interpreter, or ``$(curl …)`` in ``sh -c``;
- ``base64-exec``: ``base64 -d`` feeding a shell, anywhere;
- ``encoded-blob``: a long base64 run inside a prerequisites/setup/install section;
- ``setup-commands``: shell commands in such a section (what the agent might be asked to run);
- ``sudo``: privilege escalation (critical inside a setup section);
- ``link-outside``: a relative link or path that leaves the bundle, or a ``file:`` URL;
- ``large-file``: a file over 1 MiB (the hard limit is enforced while staging).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from homarus.skills.archive import Member

__all__ = ["Finding", "has_critical", "scan_bundle"]

Severity = Literal["critical", "warn", "info"]

LARGE_FILE_BYTES = 1024 * 1024
_SCAN_BYTES = 512 * 1024
_BINARY_MAGIC = (b"\x7fELF", b"MZ", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
_SCRIPT_EXT = frozenset({".sh", ".bash", ".zsh", ".ksh", ".fish", ".ps1", ".bat", ".cmd", ".command", ".exe", ".msi"})
_TEXT_EXT = frozenset({".md", ".txt", ".markdown", ".rst", ".yaml", ".yml", ".json", ".toml", ".py", ".js", ".ts"})
_PIPE_SHELL = re.compile(
    r"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^\n|;]*\|\s*(?:sudo\s+)?"
    r"(?:ba|z|k|da|fi)?sh\b|\b(?:curl|wget)\b[^\n|;]*\|\s*(?:sudo\s+)?(?:python3?|perl|ruby|node|iex)\b",
    re.IGNORECASE,
)
_SUBST_SHELL = re.compile(r"\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?\$\(\s*(?:curl|wget)\b|<\(\s*(?:curl|wget)\b", re.I)
_BASE64_EXEC = re.compile(r"base64\s+(?:-d|--decode|-D)\b[^\n]*\|\s*(?:sudo\s+)?(?:ba|z)?sh\b", re.IGNORECASE)
_BLOB = re.compile(r"[A-Za-z0-9+/]{120,}={0,2}")
_SUDO = re.compile(r"(?:^|[\s;&|`$(])sudo\s+\S", re.MULTILINE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*)$")
_SETUP_HEADING = re.compile(
    r"prerequisite|pre-requisite|setup|set up|install|requirement|getting started|before you", re.I
)
_SHELL_LINE = re.compile(r"^\s*(?:\$\s+|sudo\s|curl\s|wget\s|bash\s|sh\s|chmod\s|pip3?\s+install|npm\s+i|brew\s)")
_MD_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)")
_FILE_URL = re.compile(r"\bfile:/{1,3}[^\s)]+", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Finding:
    severity: Severity
    code: str
    file: str
    message: str
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"severity": self.severity, "code": self.code, "file": self.file, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        return out


def has_critical(findings: list[Finding]) -> bool:
    return any(f.severity == "critical" for f in findings)


def _executable(m: Member, head: bytes) -> str | None:
    ext = os.path.splitext(m.path)[1].lower()
    if any(head.startswith(magic) for magic in _BINARY_MAGIC):
        return "binary executable"
    if head.startswith(b"#!"):
        return "script with a #! line"
    if m.executable:
        return "file marked executable"
    if ext in _SCRIPT_EXT:
        return f"{ext} script"
    return None


def _is_text(m: Member, head: bytes) -> bool:
    if b"\x00" in head[:8192]:
        return False
    return os.path.splitext(m.path)[1].lower() in _TEXT_EXT or not os.path.splitext(m.path)[1]


def _leaves(path: str, link: str) -> bool:
    target = link.split("#", 1)[0].split("?", 1)[0]
    if not target or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target):
        return False  # http(s), mailto, ... are not paths in the bundle
    if target.startswith(("/", "~")):
        return True
    depth = len(path.split("/")) - 1
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def _scan_text(path: str, text: str, out: list[Finding]) -> None:
    in_setup = False
    for n, line in enumerate(text.splitlines(), 1):
        heading = _HEADING.match(line)
        if heading:
            in_setup = bool(_SETUP_HEADING.search(heading.group(1)))
            continue
        shown = line.strip()[:160]
        if _PIPE_SHELL.search(line) or _SUBST_SHELL.search(line):
            out.append(Finding("critical", "pipe-to-shell", path, f"download run by a shell: {shown}", n))
        if _BASE64_EXEC.search(line):
            out.append(Finding("critical", "base64-exec", path, f"decoded data run by a shell: {shown}", n))
        if in_setup and _BLOB.search(line):
            out.append(Finding("critical", "encoded-blob", path, "long base64 run in a setup section", n))
        if _SUDO.search(line):
            sev: Severity = "critical" if in_setup else "warn"
            out.append(Finding(sev, "sudo", path, f"asks for root: {shown}", n))
        if in_setup and _SHELL_LINE.match(line):
            out.append(Finding("warn", "setup-commands", path, f"setup command for someone to run: {shown}", n))
        for link in _MD_LINK.findall(line):
            if _leaves(path, link):
                out.append(Finding("warn", "link-outside", path, f"link leaves the bundle: {link[:160]}", n))
        for url in _FILE_URL.findall(line):
            out.append(Finding("warn", "link-outside", path, f"file: URL: {url[:160]}", n))


def scan_bundle(root: Path, members: list[Member]) -> list[Finding]:
    """Findings for the staged bundle at ``root`` (members relative to it)."""
    findings: list[Finding] = []
    for m in members:
        with open(root / m.path, "rb") as fh:
            head = fh.read(_SCAN_BYTES)
        why = _executable(m, head)
        if why:
            findings.append(
                Finding(
                    "critical", "executable-file", m.path, f"{why}; it will be installed without execute permission"
                )
            )
        if m.size > LARGE_FILE_BYTES:
            findings.append(Finding("warn", "large-file", m.path, f"{m.size:,} bytes"))
        if _is_text(m, head) or why in ("script with a #! line", "file marked executable"):
            _scan_text(m.path, head.decode("utf-8", "replace"), findings)
    return findings
