"""`homarus skills list|info|status|install|remove`: skills on this machine, no gateway needed.

The commands read the config and the state dir directly (as a run does), so they work whether or
not a gateway is running; a running gateway picks up an installed or removed skill at its next
run. Plugin skill directories come from plugin manifests (read, never imported). Module-level
imports stay cheap: the parser is built at ``homarus --help`` time.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths
    from homarus.config.schema import HomarusConfig
    from homarus.skills.catalog import PluginSkillDir, SkillsView

__all__ = ["add_skills_parser", "run_skills"]


def add_skills_parser(sk: argparse.ArgumentParser) -> None:
    """``skills``' subcommands and their arguments, on its parser ``sk``."""
    ss = sk.add_subparsers(dest="skills_command", metavar="SUBCOMMAND")
    ls = ss.add_parser("list", help="every skill found: name, source, whether it is offered")
    ls.add_argument("--agent", help="agent id (default: the default agent)")
    ls.add_argument("--json", action="store_true")
    info = ss.add_parser("info", help="one skill: front matter, gating, files, install record")
    info.add_argument("name")
    info.add_argument("--agent")
    info.add_argument("--json", action="store_true")
    st = ss.add_parser("status", help="why each skill is or is not offered, diagnostics, prompt budget")
    st.add_argument("--agent")
    st.add_argument("--json", action="store_true")
    ins = ss.add_parser("install", help="install a skill from a directory, .zip or .tar.gz (nothing is executed)")
    ins.add_argument("source")
    ins.add_argument("--force", action="store_true", help="install despite critical findings, or replace a foreign dir")
    ins.add_argument("--json", action="store_true")
    rm = ss.add_parser("remove", help="remove an installed skill from the state dir")
    rm.add_argument("name")


def _plugin_dirs(cfg: HomarusConfig, paths: StatePaths) -> list[PluginSkillDir]:
    from homarus.plugins.discovery import discover_plugins
    from homarus.plugins.loader import default_workspace, disabled_reason
    from homarus.skills.catalog import PluginSkillDir

    if not cfg.plugins.enabled:
        return []
    found = discover_plugins(cfg.plugins, state_dir=paths.state_dir, workspace=default_workspace(cfg, paths.state_dir))
    out: list[PluginSkillDir] = []
    for c in found.candidates:
        if c.manifest is None or c.root is None or c.problem or c.blocked:
            continue
        if disabled_reason(c.id, c.origin, cfg.plugins):
            continue
        out.extend(PluginSkillDir(c.id, c.root, rel) for rel in c.manifest.skills or ())
    return out


def _view(paths: StatePaths, agent: str | None) -> tuple[SkillsView, HomarusConfig, str]:
    from homarus.agents.setup import workspace_dir
    from homarus.config.loader import load_config
    from homarus.skills.catalog import load_view

    cfg = load_config(paths).config
    agent_id = agent or cfg.agents.default_id
    ws = workspace_dir(agent_id, cfg, paths.state_dir)
    view = load_view(
        cfg, workspace=ws, state_dir=paths.state_dir, agent_id=agent_id, plugin_dirs=_plugin_dirs(cfg, paths)
    )
    return view, cfg, agent_id


def _out(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _err(message: str) -> None:
    sys.stderr.write(f"homarus: {message}\n")


def _list(paths: StatePaths, args: argparse.Namespace, *, full: bool) -> int:
    from homarus.skills.report import status_json

    view, cfg, agent_id = _view(paths, args.agent)
    data = status_json(view, cfg, agent_id=agent_id)
    if args.json:
        _out(data if full else data["skills"])
        return 0
    for s in data["skills"]:
        state = "ready" if s["eligible"] else "hidden"
        print(f"{s['name']:<28} {s['source']:<10} {state:<7} {s['description'][:70]}")
        if full and not s["eligible"]:
            for why in s["reasons"]:
                print(f"    - {why}")
    if full:
        p = data["prompt"]
        print(f"prompt: {len(p['included'])} listed, {len(p['omitted'])} left out by skills.limits, {p['chars']} chars")
        for d in data["diagnostics"]:
            print(f"{d['level']}: {d['path']}: {d['message']}")
    return 0


def _info(paths: StatePaths, args: argparse.Namespace) -> int:
    from homarus.skills.report import detail_json

    view, _, _ = _view(paths, args.agent)
    data = detail_json(view, args.name)
    if data is None:
        _err(f"no skill named {args.name!r} (see `homarus skills status` for skills that failed to load)")
        return 1
    if args.json:
        _out(data)
        return 0
    print(f"{data['name']}: {data['description']}")
    print(f"  source: {data['source']} ({data['origin']})\n  file:   {data['filePath']}")
    print(f"  offered: {'yes' if data['eligible'] else 'no'}")
    for why in data["reasons"]:
        print(f"    - {why}")
    if "install" in data:
        print(f"  installed from {data['install']['source']} ({data['install']['contentHash']})")
        for f in data["install"].get("findings") or []:
            print(f"    [{f['severity']}] {f['code']} {f['file']}: {f['message']}")
    print(f"  files: {', '.join(f['path'] for f in data['files'])}")
    return 0


def _install(paths: StatePaths, args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from homarus.skills.install import install_skill

    result = asyncio.run(install_skill(Path(args.source).expanduser().absolute(), paths.state_dir, force=args.force))
    if args.json:
        _out(result.to_json())
        return 0 if result.ok else 1
    for f in result.findings:
        where = f"{f.file}:{f.line}" if f.line else f.file
        print(f"[{f.severity}] {f.code} {where}: {f.message}")
    if not result.ok:
        _err(f"not installed: {result.refused}")
        return 1
    what = "unchanged" if result.unchanged else "replaced" if result.replaced else "installed"
    print(f"{what}: {result.name} → {result.path} ({result.content_hash})")
    return 0


def _remove(paths: StatePaths, args: argparse.Namespace) -> int:
    from homarus.errors import HomarusError
    from homarus.skills.install import remove_skill

    try:
        removed = remove_skill(paths.state_dir, args.name)
    except HomarusError as exc:
        _err(exc.message)
        return 1
    print(f"removed: {args.name} ({removed})")
    return 0


def run_skills(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.errors import ConfigError

    sub = args.skills_command
    try:
        if sub == "list":
            return _list(paths, args, full=False)
        if sub == "status":
            return _list(paths, args, full=True)
        if sub == "info":
            return _info(paths, args)
        if sub == "install":
            return _install(paths, args)
        if sub == "remove":
            return _remove(paths, args)
    except ConfigError as exc:
        _err(exc.message)
        return 1
    _err("usage: homarus skills {list,info,status,install,remove}")
    return 2
