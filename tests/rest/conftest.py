"""REST tests go through a real Envoy in front of the real gRPC server.

One service per database backend serves the whole session; tests keep apart by
using partners and addresses of their own.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from support.databases import BACKENDS, temporary_database
from support.service import RunningService, running_service
from yieldagent.domain.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.partners import PartnerStore

_names = itertools.count()


@pytest.fixture(scope="session", params=BACKENDS)
def api(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningService]:
    """The running service, reached through its REST edge."""
    directory = tmp_path_factory.mktemp(f"service-{request.param}")
    with (
        temporary_database(request.param, directory) as url,
        running_service(url, directory) as service,
    ):
        yield service


@pytest.fixture(scope="session")
def api_engine(api: RunningService) -> Iterator[Engine]:
    """An engine on the service's database, for setting up partners."""
    engine = create_db_engine(api.database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def make_partner(api_engine: Engine):  # type: ignore[no-untyped-def]
    """Creates a partner and returns its credential headers."""

    def make(permissions: frozenset[str] = PERMISSIONS) -> dict[str, str]:
        name = f"partner-{next(_names)}"
        _, key = PartnerStore(api_engine).create(name, permissions)
        return {"X-Partner-Name": name, "X-Partner-API-Key": key}

    return make


@pytest.fixture
def keyed(make_partner) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Credential headers of a fresh partner with every permission."""
    headers: dict[str, str] = make_partner()
    return headers
