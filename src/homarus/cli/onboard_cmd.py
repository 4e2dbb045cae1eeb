"""`homarus onboard`: from nothing to a working assistant without opening the config file.

Asks (or takes as flags, with ``--non-interactive`` for scripts): the model provider, its URL
and key, which of the models it lists to use; optionally a chat channel (each channel plugin says
what to ask: ``ChannelSpec.setup``). The key is checked by
listing the provider's models and the chosen model by one real round trip, before anything is
written. The key goes to ``$STATE/secrets.env`` (0600) and the config references it as
``${NAME}`` (``--key-storage env``: only the reference, the variable is yours to set). An
existing config is shown as a diff and only replaced when the user says so (``--yes``); the
replaced file is kept as a backup. Nothing is written until the end: an interrupted wizard
leaves everything as it was.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from homarus.cli.onboard_config import PRESETS, Preset, merged_config, render_config
from homarus.cli.prompts import Interrupted, Prompter, unified_diff

if TYPE_CHECKING:
    from homarus.channels.adapter import ChannelSpec
    from homarus.config.paths import StatePaths
    from homarus.providers.probe import Offered

__all__ = ["add_onboard_parser", "run_onboard"]

MAX_LISTED = 25


class Stop(Exception):
    """The wizard cannot go on: the message says why and what to do."""


def add_onboard_parser(ob: argparse.ArgumentParser) -> None:
    ob.add_argument("--provider", choices=list(PRESETS), help="the model provider")
    ob.add_argument("--base-url", help="the provider's API URL (local servers, custom)")
    ob.add_argument(
        "--api-key", help="the key (visible to other local users in ps: prefer the prompt or --api-key-env)"
    )
    ob.add_argument("--api-key-env", metavar="NAME", help="read the key from this environment variable")
    ob.add_argument("--key-storage", choices=["secrets", "env"], default="secrets",
                    help="secrets: $STATE/secrets.env (default); env: reference ${NAME} only")  # fmt: skip
    ob.add_argument("--model", help="the model id (as the provider lists it)")
    ob.add_argument("--skip-test", action="store_true", help="do not make the test request to the model")
    ob.add_argument("--channel", metavar="ID", help="add this chat channel (with --channel-token)")
    ob.add_argument("--channel-token", help='the channel\'s secret (a bot token; "-": read stdin)')
    ob.add_argument("--no-channel", action="store_true", help="do not ask about a chat channel")
    ob.add_argument("--install-service", action="store_true", help="then run the gateway as a background service")
    ob.add_argument("--non-interactive", action="store_true", help="never ask: flags or fail")
    ob.add_argument("--yes", action="store_true", help="replace an existing config without asking")


def run_onboard(args: argparse.Namespace, paths: StatePaths) -> int:
    interactive = not args.non_interactive
    prompter = Prompter()
    try:
        return _wizard(args, paths, prompter, interactive)
    except Interrupted:
        print("\nstopped: nothing was written", file=sys.stderr)
        return 130
    except Stop as exc:
        print(f"homarus onboard: {exc}", file=sys.stderr)
        return 1


def _wizard(args: argparse.Namespace, paths: StatePaths, ask: Prompter, interactive: bool) -> int:
    from homarus.config.store import ConfigStore
    from homarus.errors import ConfigError

    print(f"Homarus setup: config {paths.config_path}, state {paths.state_dir}\n")
    preset = _provider(args, ask, interactive)
    base_url = _base_url(args, ask, interactive, preset)
    key, key_env = _key(args, ask, interactive, preset)
    offered = _check(preset, base_url, key, ask, interactive)
    model = _model(args, ask, interactive, offered)
    provider: dict[str, Any] = {"api": preset.api, "baseUrl": base_url, "models": [_entry(model, offered)]}
    if key is not None and key_env is not None:
        provider["apiKey"] = "${" + key_env + "}"
    ref = f"{preset.id}/{model}"
    if not args.skip_test:
        _round_trip(preset, base_url, key, model)
    channel = _channel(args, paths, ask, interactive)

    try:
        store = ConfigStore.open(paths, env=_env_with(paths, key_env, key))
    except ConfigError as exc:
        raise Stop(f"the existing config does not load ({exc}); fix it or `homarus config restore` first") from None
    current = store.current
    data = merged_config(current.parsed, provider_id=preset.id, provider=provider, model_ref=ref, channel_patch=channel)
    text = render_config(data)
    if current.exists and current.raw != text:
        sys.stdout.write(unified_diff(current.raw or "", text, str(paths.config_path), "new config"))
        if not args.yes and not (interactive and ask.yes("Replace the config with this?", default=True)):
            raise Stop("the existing config was left as it is (re-run with --yes to replace it)")
    _write_secret(paths, args, key_env, key)
    try:
        store.replace_raw(text)
    except ConfigError as exc:
        raise Stop(f"the new config did not validate, nothing was replaced: {exc}") from None
    _workspace(paths, store)
    print(f"\nDone. Default model: {ref}. The previous config (if any) is backup 1: homarus config backups")
    if _service(args, ask, interactive, paths):
        print('Next: homarus agent -m "Hello!"   (or open the Control UI: homarus gateway status shows the port)')
        return 0
    print("Next: homarus gateway run        (or: make run), then in another terminal:")
    print('      homarus agent -m "Hello!"')
    return 0


def _service(args: argparse.Namespace, ask: Prompter, interactive: bool, paths: StatePaths) -> bool:
    """Install the background service when asked to; whether it now runs."""
    wanted = args.install_service
    if not wanted and interactive and sys.platform.startswith("linux"):
        from homarus.cli.service_cmd import manager_problem

        wanted = manager_problem() is None and ask.yes(
            "Run the gateway in the background now (a systemd user service)?"
        )
    if not wanted:
        return False
    from homarus.cli.service_cmd import run_service

    ns = argparse.Namespace(gateway_command="install", port=None, no_start=False)
    return run_service(ns, paths) == 0


def _provider(args: argparse.Namespace, ask: Prompter, interactive: bool) -> Preset:
    if args.provider:
        return PRESETS[args.provider]
    if not interactive:
        raise Stop(f"--provider is needed with --non-interactive ({', '.join(PRESETS)})")
    choice = ask.choose("Model provider", [(p.id, p.label) for p in PRESETS.values()], default="openai")
    return PRESETS[choice]


def _base_url(args: argparse.Namespace, ask: Prompter, interactive: bool, preset: Preset) -> str:
    url: str = args.base_url or preset.base_url
    if not args.base_url and interactive and (preset.local or not preset.base_url):
        # asked for local servers and custom URLs; a cloud provider's is known
        url = ask.ask("API URL (the base, often ending in /v1)", preset.base_url or None)
    if not url:
        raise Stop("--base-url is needed for this provider")
    if not url.startswith(("http://", "https://")):
        raise Stop(f"{url!r} is not an http(s) URL")
    return url.rstrip("/")


def _key(args: argparse.Namespace, ask: Prompter, interactive: bool, preset: Preset) -> tuple[str | None, str | None]:
    """(the key, the variable it is stored under); (None, None) for a server without keys."""
    name = args.api_key_env or preset.key_env
    if args.api_key_env:
        value = os.environ.get(args.api_key_env)
        if not value:
            raise Stop(f"--api-key-env: {args.api_key_env} is not set")
        return value, args.api_key_env
    if args.api_key:
        return (sys.stdin.readline().strip() if args.api_key == "-" else args.api_key.strip()), name or "MODEL_API_KEY"
    if preset.local:
        return None, None
    if name and os.environ.get(name) and (not interactive or ask.yes(f"Use the key in ${name}?", default=True)):
        return os.environ[name], name
    if not interactive:
        raise Stop(f"a key is needed: --api-key-env NAME, --api-key - (stdin), or set {name}")
    while True:
        value = ask.secret("API key" if preset.id == "custom" else f"{preset.label} API key")
        if value:
            return value, name or "MODEL_API_KEY"
        print("  the key is empty")


def _check(preset: Preset, base_url: str, key: str | None, ask: Prompter, interactive: bool) -> list[Offered]:
    import asyncio

    from homarus.providers.probe import ProbeFailed, list_models

    print(f"Checking {base_url} …")
    try:
        offered = asyncio.run(list_models(preset.api, base_url, key))
    except ProbeFailed as exc:
        raise Stop(str(exc)) from None
    print(f"  ok: {len(offered)} model(s) offered")
    return offered


def _model(args: argparse.Namespace, ask: Prompter, interactive: bool, offered: list[Offered]) -> str:
    ids = [o.id for o in offered]
    if args.model:
        if ids and args.model not in ids:
            close = [i for i in ids if args.model.split("/")[-1].split(":")[0] in i][:5]
            hint = f" (close: {', '.join(close)})" if close else f" (it offers: {', '.join(ids[:8])}…)"
            raise Stop(f"the provider does not offer {args.model!r}{hint}")
        return str(args.model)
    if not interactive:
        raise Stop("--model is needed with --non-interactive" + (f" (offered: {', '.join(ids[:8])})" if ids else ""))
    if not ids:
        return ask.ask("Model id")
    shown = ids[:MAX_LISTED]
    for n, ident in enumerate(shown, 1):
        print(f"  {n}) {ident}")
    if len(ids) > MAX_LISTED:
        print(f"  … and {len(ids) - MAX_LISTED} more: type an id")
    while True:
        answer = ask.ask("Model (number or id)", "1")
        if answer.isdigit() and 1 <= int(answer) <= len(shown):
            return shown[int(answer) - 1]
        if answer in ids:
            return answer
        print("  not one the provider offers")


def _entry(model: str, offered: list[Offered]) -> dict[str, Any]:
    window = next((o.context_window for o in offered if o.id == model), None)
    return {"id": model, **({"contextWindow": window} if window and window >= 1000 else {})}


def _round_trip(preset: Preset, base_url: str, key: str | None, model: str) -> None:
    import asyncio

    from homarus.config.models import ModelsConfig
    from homarus.errors import HomarusError
    from homarus.providers.adapters import default_factories
    from homarus.providers.probe import round_trip
    from homarus.providers.registry import ModelRegistry

    cfg = ModelsConfig.model_validate({"providers": {preset.id: {"api": preset.api, "baseUrl": base_url}}})
    registry = ModelRegistry(cfg, factories=default_factories())
    try:
        resolved = registry.resolve(f"{preset.id}/{model}")
        result = asyncio.run(round_trip(resolved.provider, resolved.info, key, timeout=60.0))
    except HomarusError as exc:
        raise Stop(str(exc)) from None
    print(f"  {model} answered in {result.seconds:.2f} s ({result.usage.input} in / {result.usage.output} out tokens)")


def _channel(args: argparse.Namespace, paths: StatePaths, ask: Prompter, interactive: bool) -> dict[str, Any] | None:
    """The config patch of the chat channel to add (None: none), checked with the platform."""
    if args.no_channel or (args.channel is None and not interactive):
        return None
    from homarus.cli.channels_cmd import channel_add_patch, channel_specs
    from homarus.errors import HomarusError

    try:
        specs = {cid: s for cid, s in channel_specs(paths).items() if s.setup is not None}
    except HomarusError as exc:
        raise Stop(f"the existing config does not load ({exc}); fix it or `homarus config restore` first") from None
    chosen: ChannelSpec | None
    if args.channel is not None:
        if args.channel not in specs:
            raise Stop(f"--channel {args.channel}: onboarding sets up {', '.join(sorted(specs)) or 'no channel'}")
        chosen, token = specs[args.channel], args.channel_token
    else:
        questions = sorted(
            ((s.label, s.setup.onboard_question, s) for s in specs.values() if s.setup and s.setup.onboard_question),
            key=lambda row: row[0],
        )
        chosen = next((s for _, question, s in questions if ask.yes(question)), None)
        token = None
    if chosen is None or chosen.setup is None:
        return None
    if token is None and interactive:
        token = ask.secret(chosen.setup.credential_label[:1].upper() + chosen.setup.credential_label[1:])
    if not token:
        return None
    ns = argparse.Namespace(
        channel=chosen.id, account=None, bot_token=token, token_env=False, dm_policy=None,
        allow_from=None, api_root=None, no_verify=False, mode=None, secret=None,
    )  # fmt: skip
    try:
        patch, name = channel_add_patch(ns, chosen, prompt=ask.secret if interactive else None)
    except ValueError as exc:
        raise Stop(f"{chosen.label}: {exc}") from None
    print(f"  {chosen.label} {name}: strangers get a pairing code; approve them with `homarus pairing approve`")
    return patch


def _env_with(paths: StatePaths, name: str | None, value: str | None) -> dict[str, str]:
    from homarus.config.secrets import merged_env

    env = merged_env(paths.state_dir)
    return {**env, name: value} if name and value else env


def _write_secret(paths: StatePaths, args: argparse.Namespace, name: str | None, value: str | None) -> None:
    from homarus.config.secrets import write_secret

    if name is None or value is None:
        return
    if args.key_storage == "env" or (args.api_key_env and os.environ.get(args.api_key_env) == value):
        print(f"  the config references ${name}: set it in the gateway's environment")
        return
    write_secret(paths.state_dir, name, value)
    print(f"  key stored in {paths.state_dir / 'secrets.env'} (0600) as {name}")


def _workspace(paths: StatePaths, store: Any) -> None:
    from homarus.agents.workspace import ensure_workspace

    cfg = store.current.config
    workspace = cfg.agents.workspace_for(cfg.agents.default_id, paths.state_dir)
    if ensure_workspace(workspace):
        print(f"  workspace created: {workspace}")
