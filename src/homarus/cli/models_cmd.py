"""`homarus models list|set|fallbacks|test`: the agents' model, from the command line.

``list`` shows the configured models (``--discover`` also asks each provider what it offers);
``set`` makes one the default (adding it to its provider's list when the provider is configured);
``fallbacks`` edits the ordered fallback list; ``test`` makes one real, tiny request and prints
its latency and token counts. Writes go through the config store (validated whole, the previous
file kept as a backup); keys are never printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths
    from homarus.config.schema import HomarusConfig

__all__ = ["add_models_parser", "run_models"]


def add_models_parser(md: argparse.ArgumentParser) -> None:
    ms = md.add_subparsers(dest="models_command", metavar="SUBCOMMAND")
    ls = ms.add_parser("list", help="configured models with their context window (--discover: what providers offer)")
    ls.add_argument("--discover", action="store_true", help="also ask each configured provider for its models")
    ls.add_argument("--json", action="store_true")
    st = ms.add_parser("set", help="make <provider>/<model> the default model")
    st.add_argument("ref")
    fb = ms.add_parser("fallbacks", help="the models tried in order when the default fails")
    fbs = fb.add_subparsers(dest="fallbacks_command", metavar="ACTION")
    fbs.add_parser("list", help="the fallbacks in order")
    for name, what in (("add", "append a fallback"), ("remove", "remove a fallback")):
        fbs.add_parser(name, help=what).add_argument("ref")
    ts = ms.add_parser("test", help="one real round trip: latency and token counts")
    ts.add_argument("ref", nargs="?", help="<provider>/<model> (default: the default model)")
    ts.add_argument("--timeout", type=float, default=60.0)


def _err(message: str) -> int:
    sys.stderr.write(f"homarus: {message}\n")
    return 1


def run_models(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.config.loader import load_config

    cfg = load_config(paths).config
    sub = args.models_command
    if sub == "list":
        return _list(cfg, paths, discover=args.discover, as_json=args.json)
    if sub == "set":
        return _set(cfg, paths, args.ref)
    if sub == "fallbacks":
        return _fallbacks(cfg, paths, args.fallbacks_command, getattr(args, "ref", None))
    if sub == "test":
        return _test(cfg, paths, args.ref or _primary(cfg), args.timeout)
    return _err("usage: homarus models {list,set,fallbacks,test}")


def _primary(cfg: HomarusConfig) -> str:
    from homarus.providers.registry import BUILTIN_MODEL

    return cfg.agents.defaults.model.primary or BUILTIN_MODEL


def _list(cfg: HomarusConfig, paths: StatePaths, *, discover: bool, as_json: bool) -> int:
    primary, fallbacks = _primary(cfg), cfg.agents.defaults.model.fallbacks
    rows: list[dict[str, Any]] = [{"ref": "homarus/echo", "contextWindow": 200_000, "configured": True}]
    for pid, provider in cfg.models.providers.items():
        rows += [
            {"ref": f"{pid}/{m.id}", "contextWindow": m.context_window, "configured": True} for m in provider.models
        ]
    problems: list[str] = []
    if discover:
        import asyncio

        known = {r["ref"] for r in rows}
        for pid, offered, problem in asyncio.run(_discover_all(cfg, paths)):
            if problem:
                problems.append(f"{pid}: {problem}")
            for o in offered:
                if f"{pid}/{o.id}" not in known:
                    rows.append({"ref": f"{pid}/{o.id}", "contextWindow": o.context_window, "configured": False})
    for row in rows:
        tags = ["default"] if row["ref"] == primary else []
        tags += [f"fallback {fallbacks.index(row['ref']) + 1}"] if row["ref"] in fallbacks else []
        row["tags"] = tags + ([] if row["configured"] else ["offered"])
    if as_json:
        print(json.dumps({"models": rows, "problems": problems}, indent=2))
        return 0
    width = max(len(r["ref"]) for r in rows)
    for row in rows:
        window = f"{row['contextWindow']:>9,}" if row["contextWindow"] else "        ?"
        print(f"{row['ref']:<{width}}  {window}  {', '.join(row['tags'])}".rstrip())
    for problem in problems:
        print(f"! {problem}", file=sys.stderr)
    return 0


async def _discover_all(cfg: HomarusConfig, paths: StatePaths) -> list[tuple[str, list[Any], str | None]]:
    from homarus.providers.probe import ProbeFailed, list_models

    registry = _registry(cfg, paths)
    out: list[tuple[str, list[Any], str | None]] = []
    for pid, provider in cfg.models.providers.items():
        if provider.api == "scripted":
            continue
        base = registry.base_url(pid)
        try:
            out.append((pid, await list_models(provider.api, base, registry.api_key(pid)), None))
        except ProbeFailed as exc:
            out.append((pid, [], str(exc)))
    return out


def _registry(cfg: HomarusConfig, paths: StatePaths) -> Any:
    from homarus.providers.adapters import configured_registry

    return configured_registry(cfg.models, paths)


def _check_ref(cfg: HomarusConfig, ref: str) -> str | None:
    """Why ``ref`` cannot be used, or None."""
    provider_id, sep, model_id = ref.partition("/")
    if not sep or not provider_id or not model_id:
        return f"{ref!r} is not <provider>/<model> (e.g. openai/gpt-4.1-mini)"
    if provider_id == "homarus":
        return None if model_id == "echo" else "the built-in provider has only homarus/echo"
    if provider_id not in cfg.models.providers:
        known = ", ".join(cfg.models.providers) or "none yet"
        return f"no provider {provider_id!r} in the config (configured: {known}); `homarus onboard` adds one"
    return None


def _write(paths: StatePaths, patch: dict[str, Any]) -> None:
    from homarus.config.store import ConfigStore

    result = ConfigStore.open(paths).patch(patch)
    print(f"{'unchanged' if result.noop else 'updated'}: {paths.config_path}")


def _with_model(cfg: HomarusConfig, ref: str) -> dict[str, Any]:
    """The patch that lists ``ref``'s model under its provider when it is not there yet."""
    provider_id, _, model_id = ref.partition("/")
    provider = cfg.models.providers.get(provider_id)
    if provider is None or any(m.id == model_id for m in provider.models):
        return {}
    ids = [m.id for m in provider.models] + [model_id]
    return {"models": {"providers": {provider_id: {"models": [{"id": i} for i in ids]}}}}


def _set(cfg: HomarusConfig, paths: StatePaths, ref: str) -> int:
    why = _check_ref(cfg, ref)
    if why:
        return _err(why)
    patch = _with_model(cfg, ref)
    patch["agents"] = {"defaults": {"model": {"primary": ref}}}
    _write(paths, _keep_entries(cfg, patch))
    print(f"default model: {ref} (try it: homarus models test)")
    return 0


def _keep_entries(cfg: HomarusConfig, patch: dict[str, Any]) -> dict[str, Any]:
    """A merge patch replaces lists whole: carry each kept model entry's other fields."""
    providers = patch.get("models", {}).get("providers", {})
    for pid, body in providers.items():
        old = {m.id: m.model_dump(by_alias=True, exclude_defaults=True) for m in cfg.models.providers[pid].models}
        body["models"] = [old.get(e["id"], e) for e in body["models"]]
    return patch


def _fallbacks(cfg: HomarusConfig, paths: StatePaths, action: str | None, ref: str | None) -> int:
    current = list(cfg.agents.defaults.model.fallbacks)
    if action in (None, "list"):
        for n, item in enumerate(current, 1):
            print(f"{n}. {item}")
        if not current:
            print("no fallbacks (add one: homarus models fallbacks add <provider>/<model>)")
        return 0
    assert ref is not None
    if action == "add":
        why = _check_ref(cfg, ref)
        if why:
            return _err(why)
        if ref in current:
            return _err(f"{ref} is a fallback already")
        if ref == _primary(cfg):
            return _err(f"{ref} is the default model; a fallback is another model")
        patch = _with_model(cfg, ref)
        current.append(ref)
    else:
        if ref not in current:
            return _err(f"{ref} is not a fallback (see: homarus models fallbacks list)")
        patch = {}
        current.remove(ref)
    patch["agents"] = {"defaults": {"model": {"fallbacks": current}}}
    _write(paths, _keep_entries(cfg, patch))
    return 0


def _test(cfg: HomarusConfig, paths: StatePaths, ref: str, timeout: float) -> int:
    import asyncio

    from homarus.errors import HomarusError
    from homarus.providers.probe import round_trip

    why = _check_ref(cfg, ref)
    if why:
        return _err(why)
    try:
        resolved = _registry(cfg, paths).resolve(ref)
        result = asyncio.run(round_trip(resolved.provider, resolved.info, resolved.api_key, timeout=timeout))
    except HomarusError as exc:
        return _err(str(exc))
    first = f", first token {result.first_token_s:.2f} s" if result.first_token_s is not None else ""
    usage = result.usage
    answer = result.text.strip().replace("\n", " ")[:60]
    print(f"ok  {ref}  {result.seconds:.2f} s{first}  tokens in {usage.input} / out {usage.output}  answer {answer!r}")
    return 0
