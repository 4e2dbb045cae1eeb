"""The host's exec approvals on a real PostgreSQL (security/pg_exec_approvals.py): one document for
the cluster, grants from two gateways at once both kept, a damaged or unreachable document read as
deny/always/deny by the exec policy."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from homarus.errors import ConfigError
from homarus.security.exec_approvals_file import MAX_PATTERNS, STRICT_POLICY, ExecApprovalsFile, ExecPolicySettings
from homarus.security.pg_exec_approvals import PgExecApprovals
from homarus.storage.blocking import BlockingDatabase
from homarus.storage.database import StorageUnavailable
from homarus.storage.migrations import migrate_at
from homarus.tools.exec_policy import ExecPolicy, plan_exec


@pytest.fixture
def db(pg_url: str) -> Iterator[BlockingDatabase]:
    asyncio.run(migrate_at(pg_url))
    database = BlockingDatabase(pg_url, max_size=4, timeout_s=2.0)
    yield database
    database.close()


def test_no_row_means_the_defaults(db: BlockingDatabase) -> None:
    source = PgExecApprovals(db)
    assert source.read() == (None, ExecApprovalsFile()) and source.load() == ExecApprovalsFile()
    assert source.location.startswith("postgresql://127.0.0.1:") and "@" not in source.location


def test_grants_from_two_gateways_at_once_are_all_kept(db: BlockingDatabase, pg_url: str) -> None:
    other = BlockingDatabase(pg_url, max_size=4)  # a second gateway's pool
    try:
        sources = [PgExecApprovals(db), PgExecApprovals(other)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: sources[i % 2].add_patterns([f"/usr/bin/tool{i}"]), range(40)))
    finally:
        other.close()
    kept = PgExecApprovals(db).load().patterns
    assert sorted(kept) == sorted(f"/usr/bin/tool{i}" for i in range(40))


def test_the_list_stays_bounded(db: BlockingDatabase) -> None:
    source = PgExecApprovals(db)
    source.add_patterns([f"/p/{i}" for i in range(MAX_PATTERNS + 5)], now_ms=1)
    kept = source.load().patterns
    assert len(kept) == MAX_PATTERNS and kept[0] == "/p/5"


def test_the_policy_in_the_row_tightens_every_gateway(db: BlockingDatabase) -> None:
    source = PgExecApprovals(db)
    source.add_patterns(["/usr/bin/true"])
    with db.connection() as conn:
        conn.execute("""UPDATE exec_approvals SET doc = jsonb_set(doc, '{security}', '"allowlist"')""")
    policy = ExecPolicy(security="full", approvals_file=source)
    plan = plan_exec("rm -rf /tmp/x", policy, "/tmp")
    assert plan.settings.security == "allowlist" and plan.action == "deny"
    assert plan_exec("/usr/bin/true", policy, "/tmp").action == "run"  # the remembered pattern


def test_a_damaged_or_unreachable_document_is_read_as_deny(db: BlockingDatabase, pg_url: str) -> None:
    with db.connection() as conn:
        conn.execute("INSERT INTO exec_approvals(id, doc) VALUES (1, %s::jsonb)", (json.dumps({"ask": "bogus"}),))
    source = PgExecApprovals(db)
    with pytest.raises(ConfigError, match="invalid ask"):
        source.load()
    assert plan_exec("ls", ExecPolicy(security="full", approvals_file=source), "/tmp").settings == STRICT_POLICY
    away = BlockingDatabase(pg_url.rsplit(":", 1)[0] + ":9/none", max_size=1, timeout_s=1.0)
    try:
        with pytest.raises(StorageUnavailable):
            PgExecApprovals(away).load()
        plan = plan_exec("ls", ExecPolicy(security="full", approvals_file=PgExecApprovals(away)), "/tmp")
        assert plan.settings == STRICT_POLICY and plan.action == "deny"
    finally:
        away.close()


def test_an_import_keeps_what_the_cluster_has(db: BlockingDatabase) -> None:
    source = PgExecApprovals(db)
    mine = ExecApprovalsFile(ExecPolicySettings("allowlist", "on-miss", "deny"), ("/usr/bin/ls",), {"/usr/bin/ls": 3})
    assert source.import_document(mine) is True
    assert source.load() == mine
    assert source.import_document(ExecApprovalsFile()) is False  # a second move changes nothing
    assert source.load() == mine
