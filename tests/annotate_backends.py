"""Annotation-store backends for the tests: ``db_url`` is a pytest parameter, SQLite or PostgreSQL.

SQLite: a file in the test's ``tmp_path``. PostgreSQL: ``$SEGVIZ_TEST_POSTGRES_URL`` names a
server (``bash .ci/run`` starts a throwaway one, see ``.ci/postgres.sh``); every test gets a fresh
database there, dropped afterwards. Without that variable, a driver or a reachable server the
PostgreSQL cases skip and say why.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError

from segviz.annotate.store import display_url

POSTGRES_ENV = "SEGVIZ_TEST_POSTGRES_URL"
BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(scope="session")
def postgres_admin() -> Iterator[Engine]:
    """An autocommit engine on the test server (skips, with the reason, when there is none)."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"PostgreSQL: ${POSTGRES_ENV} is not set (`bash .ci/run` starts a throwaway server)")
    pytest.importorskip("psycopg", reason="PostgreSQL: the driver is missing (pip install 'psycopg[binary]')")
    engine = create_engine(url, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except SQLAlchemyError as exc:
        engine.dispose()
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        pytest.skip(f"PostgreSQL: no server at {display_url(url)}: {reason}")
    yield engine
    engine.dispose()


@pytest.fixture
def postgres_url(postgres_admin: Engine) -> Iterator[str]:
    """URL of a new, empty database on the test server; dropped after the test."""
    name = f"segviz_test_{uuid.uuid4().hex[:12]}"
    with postgres_admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    yield make_url(postgres_admin.url).set(database=name).render_as_string(hide_password=False)
    with postgres_admin.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """An empty annotation database: SQLite in tmp_path, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ann.sqlite'}"
    return request.getfixturevalue("postgres_url")
