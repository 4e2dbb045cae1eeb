"""Validation of sandbox mounts and options, shared by every backend (bubblewrap, docker).

Every custom bind ``<source>:<target>[:ro|rw]`` passes, in order:

1. the source must be absolute (``$HOME/x``, ``~/x``, relative paths and named volumes are not);
2. the lexically normalised source (``//``, ``.``, ``..``, trailing ``/``) must not be ``/`` nor
   equal to or under a blocked host path (system dirs, the Docker socket, home credential dirs,
   the gateway's state dir) or one of their real paths;
3. the target must be absolute and not equal to or under a reserved container path;
4. with ``allowed_roots``, the source must be under one of them;
5. second pass: the real path of the deepest existing ancestor, with the missing tail
   re-appended, is checked again by 2 and 4 (a symlinked parent whose leaf does not exist yet).

``network: host`` / ``container:<id>`` and ``unconfined`` seccomp or AppArmor profiles are
refused; credential-like environment keys are refused (:func:`validate_env`) or stripped
(:func:`sanitize_env`).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from homarus.errors import InvalidRequest

__all__ = [
    "BLOCKED_HOST_PATHS",
    "HOME_CREDENTIAL_DIRS",
    "RESERVED_TARGETS",
    "BindSpec",
    "SandboxSecurityError",
    "blocked_paths",
    "is_sensitive_env_key",
    "normalize",
    "parse_bind",
    "resolve_via_existing_ancestor",
    "sanitize_env",
    "validate_bind",
    "validate_binds",
    "validate_env",
    "validate_network",
    "validate_profile",
    "validate_sandbox_options",
]

BLOCKED_HOST_PATHS: tuple[str, ...] = (
    "/etc",
    "/private/etc",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/root",
    "/run",
    "/var/run",
    "/private/var/run",
    "/var/run/docker.sock",
    "/private/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd",
    "/var/lib/docker",
)
#: relative to the home directory
HOME_CREDENTIAL_DIRS: tuple[str, ...] = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".npmrc",
    ".npm",
    ".pypirc",
    ".git-credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/gh",
    ".azure",
)
RESERVED_TARGETS: tuple[str, ...] = ("/workspace", "/agent", "/proc", "/dev", "/sys")


class SandboxSecurityError(InvalidRequest):
    """A sandbox option that would weaken the isolation."""


@dataclass(frozen=True, slots=True)
class BindSpec:
    source: str
    target: str
    mode: Literal["ro", "rw"] = "rw"


def normalize(path: str) -> str:
    """Lexical normalisation: ``//`` collapsed, ``.`` and ``..`` resolved, no trailing ``/``."""
    collapsed = re.sub(r"/+", "/", path)
    return posixpath.normpath(collapsed) if collapsed else collapsed


def _under(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def resolve_via_existing_ancestor(path: str) -> str:
    """The real path of the deepest existing ancestor of ``path``, with the missing tail re-appended."""
    current, tail = normalize(path), list[str]()
    while True:
        if os.path.lexists(current):
            real = os.path.realpath(current)
            return normalize(posixpath.join(real, *reversed(tail))) if tail else real
        parent = posixpath.dirname(current)
        if parent == current:
            return normalize(path)
        tail.append(posixpath.basename(current))
        current = parent


def blocked_paths(*, home: str | None = None, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The blocked host paths: the fixed list, home credential dirs, ``extra``, and their real paths."""
    paths = list(BLOCKED_HOST_PATHS)
    if home:
        paths += [posixpath.join(normalize(home), name) for name in HOME_CREDENTIAL_DIRS]
    paths += [normalize(os.fspath(p)) for p in extra if os.fspath(p)]
    out: list[str] = []
    for path in paths:
        for variant in (path, resolve_via_existing_ancestor(path)):
            if variant != "/" and variant not in out:
                out.append(variant)
    return tuple(out)


def parse_bind(spec: str) -> BindSpec:
    """``<source>:<target>[:<options>]``; options are comma-separated (``ro``, ``rw``, ``z``, ...)."""
    parts = spec.split(":")
    if len(parts) < 2 or len(parts) > 3 or not parts[0] or not parts[1]:
        raise SandboxSecurityError(f'Sandbox security: bind mount "{spec}" is not <source>:<target>[:ro|rw]')
    options = {o.strip().lower() for o in parts[2].split(",")} if len(parts) == 3 else set()
    unknown = options - {"ro", "rw", "z", ""}
    if unknown:
        raise SandboxSecurityError(f'Sandbox security: bind mount "{spec}" has unknown options {sorted(unknown)}')
    return BindSpec(parts[0], parts[1], "ro" if "ro" in options else "rw")


def _check_source(spec: str, source: str, blocked: Sequence[str], allowed_roots: Sequence[str] | None) -> None:
    if source == "/":
        raise SandboxSecurityError(f'Sandbox security: bind mount "{spec}" covers blocked path "/"')
    for path in blocked:
        if _under(source, path):
            raise SandboxSecurityError(f'Sandbox security: bind mount "{spec}" targets blocked path "{path}"')
    if allowed_roots is not None and not any(_under(source, root) for root in allowed_roots):
        raise SandboxSecurityError(
            f'Sandbox security: bind mount "{spec}" source "{source}" is outside allowed roots '
            f"({', '.join(allowed_roots) or 'none'})"
        )


def validate_bind(
    spec: str | BindSpec,
    *,
    blocked: Sequence[str],
    allowed_roots: Sequence[str] | None = None,
    allow_reserved_targets: bool = False,
) -> BindSpec:
    """One bind (see the module docstring); the normalised spec, or :class:`SandboxSecurityError`."""
    bind = parse_bind(spec) if isinstance(spec, str) else spec
    text = spec if isinstance(spec, str) else f"{bind.source}:{bind.target}:{bind.mode}"
    if not bind.source.startswith("/"):
        raise SandboxSecurityError(f'Sandbox security: bind mount "{text}" uses a non-absolute source path')
    source = normalize(bind.source)
    _check_source(text, source, blocked, allowed_roots)
    target = normalize(bind.target)
    if not bind.target.startswith("/") or target == "/":
        raise SandboxSecurityError(f'Sandbox security: bind mount "{text}" uses an invalid container path')
    if not allow_reserved_targets:
        for reserved in RESERVED_TARGETS:
            if _under(target, reserved):
                raise SandboxSecurityError(
                    f'Sandbox security: bind mount "{text}" targets reserved container path "{reserved}"'
                )
    real_roots = (
        None if allowed_roots is None else [*allowed_roots, *(resolve_via_existing_ancestor(r) for r in allowed_roots)]
    )
    real = resolve_via_existing_ancestor(source)
    if real != source:
        _check_source(text, real, blocked, real_roots)
    return BindSpec(real, target, bind.mode)


def validate_binds(
    binds: Iterable[str | BindSpec],
    *,
    home: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    extra_blocked: Iterable[str] = (),
    allowed_roots: Sequence[str] | None = None,
    allow_reserved_targets: bool = False,
) -> list[BindSpec]:
    """Every bind, checked (the first failure raises); ``home`` defaults to ``$HOME``."""
    home = home if home is not None else os.environ.get("HOME")
    extra = [*extra_blocked, *([os.fspath(state_dir)] if state_dir is not None else [])]
    blocked = blocked_paths(home=home, extra=extra)
    roots = None if allowed_roots is None else [normalize(r) for r in allowed_roots]
    return [
        validate_bind(b, blocked=blocked, allowed_roots=roots, allow_reserved_targets=allow_reserved_targets)
        for b in binds
    ]


def validate_network(network: str | None, *, allow_container_join: bool = False) -> None:
    if network is None:
        return
    value = network.strip().lower()
    if value == "host":
        raise SandboxSecurityError(f'Sandbox security: network mode "{network}" is blocked')
    if value.startswith("container:") and not allow_container_join:
        raise SandboxSecurityError(
            f'Sandbox security: network mode "{network}" is blocked by default (joining another container\'s namespace)'
        )


def validate_profile(kind: Literal["seccomp", "apparmor"], profile: str | None) -> None:
    if profile is not None and profile.strip().lower() == "unconfined":
        raise SandboxSecurityError(f'Sandbox security: {kind} profile "{profile}" is blocked')


_SENSITIVE_KEY = re.compile(
    r"(^|_)(TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|PASS|PWD_HASH|API_?KEY|APIKEY|ACCESS_?KEY|PRIVATE_?KEY|"
    r"CREDENTIALS?|AUTH|SESSION_?KEY|CLIENT_SECRET|COOKIE)($|_)"
    r"|^(AWS|AZURE|GCP|GOOGLE_APPLICATION|GH|GITHUB|GITLAB|NPM|DOCKER|OPENAI|ANTHROPIC|HOMARUS|OPENCLAW|SSH|GPG)_",
    re.IGNORECASE,
)


def is_sensitive_env_key(key: str) -> bool:
    return key.upper() != "PWD" and bool(_SENSITIVE_KEY.search(key))


def sanitize_env(env: Mapping[str, str], *, force_allow: Iterable[str] = ()) -> tuple[dict[str, str], list[str]]:
    """(``env`` without credential-like keys, the stripped keys); ``force_allow`` keys are kept (admin)."""
    allowed = set(force_allow)
    kept = {k: v for k, v in env.items() if k in allowed or not is_sensitive_env_key(k)}
    return kept, sorted(k for k in env if k not in kept)


def validate_env(env: Mapping[str, str]) -> None:
    """Refuse credential-like keys (the model- or user-supplied environment of a sandbox)."""
    _, stripped = sanitize_env(env)
    if stripped:
        raise SandboxSecurityError(f"Sandbox security: blocked sensitive environment variables: {', '.join(stripped)}")


def validate_sandbox_options(
    *,
    binds: Iterable[str | BindSpec] = (),
    network: str | None = None,
    seccomp_profile: str | None = None,
    apparmor_profile: str | None = None,
    env: Mapping[str, str] | None = None,
    home: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    allowed_roots: Sequence[str] | None = None,
    allow_reserved_targets: bool = False,
    allow_container_join: bool = False,
) -> list[BindSpec]:
    """All of the checks above, at sandbox creation time; the validated binds."""
    validate_network(network, allow_container_join=allow_container_join)
    validate_profile("seccomp", seccomp_profile)
    validate_profile("apparmor", apparmor_profile)
    if env is not None:
        validate_env(env)
    return validate_binds(
        binds,
        home=home,
        state_dir=state_dir,
        allowed_roots=allowed_roots,
        allow_reserved_targets=allow_reserved_targets,
    )
