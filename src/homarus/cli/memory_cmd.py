"""`homarus memory status|index|search`: the agent's memory index, straight on the state dir.

Works without a gateway (a running gateway's watcher sees the same files; SQLite in WAL mode lets
both read, and a sync is one transaction). ``index --force`` rebuilds into a temp file and swaps
it in atomically. With ``storage.backend: postgres`` it works on the index the gateways share,
taking the index's lock as a gateway's sync does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths
    from homarus.config.schema import HomarusConfig
    from homarus.memory.manager import MemoryManager
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["add_memory_parser", "run_memory"]


def add_memory_parser(p: argparse.ArgumentParser) -> None:
    ms = p.add_subparsers(dest="memory_command", metavar="SUBCOMMAND")
    for name, text in (
        ("status", "files, chunks, provider, model, vector backend, freshness"),
        ("index", "index what changed (--force: rebuild everything)"),
        ("search", "search memory like the memory_search tool"),
    ):
        sp = ms.add_parser(name, help=text)
        sp.add_argument("--agent", help="agent id (default: the default agent)")
        sp.add_argument("--json", action="store_true", help="print JSON")
        if name == "index":
            sp.add_argument("--force", action="store_true", help="rebuild the whole index")
        if name == "search":
            sp.add_argument("query")
            sp.add_argument("--max-results", type=int, default=None)


def _manager(
    cfg: HomarusConfig, paths: StatePaths, agent: str | None, db: BlockingDatabase | None
) -> tuple[MemoryManager, Any]:
    from homarus.agents.setup import workspace_dir
    from homarus.memory.chain import build_embedding_provider
    from homarus.memory.manager import MemoryManager, embedding_settings

    agent_id = agent or cfg.agents.default_id
    memory = cfg.agents.defaults.memory_search
    provider, reason = build_embedding_provider(embedding_settings(memory), dict(os.environ))
    index = None
    if db is not None:  # the index the gateways of the cluster share
        from homarus.memory.pg_index import PgIndex

        index = PgIndex(db, agent_id, use_vec=memory.store.vector.enabled)
    manager = MemoryManager.from_config(
        agent_id=agent_id,
        workspace=workspace_dir(agent_id, cfg, paths.state_dir),
        state_dir=paths.state_dir,
        config=memory,
        provider=provider,
        provider_reason=reason,
        index=index,
    )
    return manager, provider


async def _run(
    args: argparse.Namespace, cfg: HomarusConfig, paths: StatePaths, db: BlockingDatabase | None
) -> dict[str, Any]:
    manager, provider = _manager(cfg, paths, args.agent, db)
    try:
        if args.memory_command == "index":
            print("indexing…", file=sys.stderr, flush=True)
            report = await manager.sync(force=args.force, reason="cli")
            return report.to_dict()
        if args.memory_command == "search":
            await manager.sync(reason="cli")
            response = await manager.search(args.query, max_results=args.max_results)
            return response.to_dict()
        status = await manager.status()
        return status.to_dict()
    finally:
        await manager.aclose()
        if provider is not None:
            await provider.aclose()


@contextlib.contextmanager
def _database(cfg: HomarusConfig) -> Iterator[BlockingDatabase | None]:
    if cfg.storage.backend != "postgres":
        yield None
        return
    from homarus.cli.storage_cmd import postgres_database

    with postgres_database(cfg) as db:
        yield db


def run_memory(args: argparse.Namespace, paths: StatePaths) -> int:
    import asyncio  # not at module level: the parser is built at `homarus --help` time

    from homarus.config.loader import load_config
    from homarus.errors import HomarusError

    try:
        cfg = load_config(paths).config
        with _database(cfg) as db:
            out = asyncio.run(_run(args, cfg, paths, db))
    except HomarusError as exc:
        print(f"homarus: {exc.message}", file=sys.stderr)
        return 1
    if args.json or args.memory_command != "search":
        print(json.dumps(out, indent=2, ensure_ascii=False, default=str))
        return 0
    print(f"mode: {out.get('mode')}" + (f" ({out['reason']})" if out.get("reason") else ""))
    for r in out.get("results", []):
        print(f"{r['score']:.3f}  {r['path']}:{r['startLine']}-{r['endLine']}")
        print("      " + " ".join(str(r.get("snippet", "")).split())[:200])
    if not out.get("results"):
        print("no results")
    return 0
