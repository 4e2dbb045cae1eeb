"""What a run is set up with: its workspace, its model chain and its system prompt."""

from __future__ import annotations

import logging
import platform
import socket
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from homarus.agents import prompt, workspace
from homarus.config.schema import HomarusConfig
from homarus.errors import InvalidRequest
from homarus.providers.registry import BUILTIN_MODEL, ModelRegistry, ResolvedModel
from homarus.sessions.keys import SessionKey
from homarus.skills.catalog import PluginSkillDir, load_view
from homarus.skills.prompt import SkillsPrompt

__all__ = ["bootstrap_files", "model_chain", "skills_prompt", "system_prompt", "workspace_dir"]

log = logging.getLogger("homarus.agents")


def workspace_dir(agent_id: str, cfg: HomarusConfig, state_dir: Path) -> Path:
    return cfg.agents.workspace_for(agent_id, state_dir)


def model_chain(
    models: ModelRegistry, cfg: HomarusConfig, key: SessionKey, requested: str | None, session_override: str | None
) -> list[ResolvedModel]:
    """Requested (or session, agent, default) model first, then the configured fallbacks."""
    agent = next((a for a in cfg.agents.list if a.id == key.agent_id), None)
    choice = agent.model if agent and agent.model else cfg.agents.defaults.model
    primary = requested or session_override or choice.primary or BUILTIN_MODEL
    configured = [r for r in (choice.primary, *choice.fallbacks) if r]
    if primary not in configured and (requested or session_override):
        # an explicitly chosen model that is not in the configured chain does not silently
        # fall back to another one: its failure is the answer
        return [models.resolve(primary)]
    refs: list[str] = []
    for ref in (primary, *choice.fallbacks, choice.primary):
        if ref and ref not in refs:
            refs.append(ref)
    resolved = []
    for i, ref in enumerate(refs):
        try:
            resolved.append(models.resolve(ref))
        except InvalidRequest:
            if i == 0:
                raise
            log.warning("skipping unresolvable fallback model %s", ref)
    return resolved


def bootstrap_files(cfg: HomarusConfig, key: SessionKey, ws: Path) -> list[workspace.BootstrapFile]:
    d = cfg.agents.defaults
    return workspace.load_bootstrap_files(
        ws,
        max_chars=d.bootstrap_max_chars,
        total_max_chars=d.bootstrap_total_max_chars,
        subagent=key.kind == "subagent",
    )


def system_prompt(
    cfg: HomarusConfig,
    key: SessionKey,
    ws: Path,
    tools: list[str],
    model_ref: str,
    *,
    channel: str | None,
    extra: str | None,
    thinking: str | None,
    files: list[workspace.BootstrapFile] | None = None,
    skills: str | None = None,
) -> str:
    d = cfg.agents.defaults
    subagent = key.kind == "subagent"
    if files is None:
        files = bootstrap_files(cfg, key, ws)
    entry = next((a for a in cfg.agents.list if a.id == key.agent_id), None)
    return prompt.build_system_prompt(
        prompt.PromptInputs(
            agent_name=(entry.name if entry and entry.name else key.agent_id),
            tools=tools,
            workspace=ws,
            bootstrap=files,
            timezone=d.user_timezone,
            model_ref=model_ref,
            channel=channel,
            mode="minimal" if subagent else "full",
            extra_system_prompt=extra,
            host=socket.gethostname(),
            os_name=platform.system(),
            thinking=thinking,
            skills=skills,
        )
    )


def skills_prompt(
    cfg: HomarusConfig,
    key: SessionKey,
    ws: Path,
    state_dir: Path,
    plugin_dirs: Callable[[], Iterable[PluginSkillDir]] | None,
    tool_names: Collection[str],
) -> SkillsPrompt | None:
    """The run's ``## Skills`` section and the skill dirs ``read`` may open; blocking file I/O.

    None for sub-agents (their minimal prompt has no skills) and when ``read`` is not available
    (a listed skill could not be opened). A failure here never fails the run.
    """
    if key.kind == "subagent" or "read" not in tool_names:
        return None
    try:
        view = load_view(
            cfg,
            workspace=ws,
            state_dir=state_dir,
            agent_id=key.agent_id,
            plugin_dirs=plugin_dirs() if plugin_dirs else (),
        )
        return view.prompt(cfg)
    except Exception:
        log.exception("skills: the skills section could not be built; the run goes on without it")
        return None
