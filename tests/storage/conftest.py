"""A real PostgreSQL for the storage tests (tests/pg_cluster.py): one cluster for the session,
a fresh database for each test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.pg_cluster import PgCluster, pg_binaries, pg_cluster


@pytest.fixture(scope="session")
def pg() -> Iterator[PgCluster]:
    if pg_binaries() is None:
        pytest.skip("no PostgreSQL server installed (apt-get install postgresql; make install does it)")
    with pg_cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_url(pg: PgCluster) -> str:
    return pg.create_database(f"t_{uuid.uuid4().hex[:12]}")
