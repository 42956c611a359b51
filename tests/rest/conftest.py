"""REST tests go through a real Envoy in front of the real gRPC server.

One service per database backend serves the whole session; tests keep apart by
using partners and addresses of their own.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

import pytest
from eth_utils.address import to_checksum_address
from sqlalchemy import Engine

from support.contract import REPORT_PROPERTY
from support.databases import BACKENDS, temporary_database
from support.funded import USDC, Funded
from support.service import RunningService, running_service
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore

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


_eoas = itertools.count(1)


@pytest.fixture(scope="session")
def world(api_engine: Engine) -> SimulatedMarket:
    """The running service's simulated market, to deposit and move time as users would."""
    market = SimulatedMarket(SimulationStore(api_engine), load_catalog(), 7, speed=0.0)
    market.start(set_speed=False)
    return market


@pytest.fixture
def fund(api: RunningService, world: SimulatedMarket, keyed: dict[str, str]):  # type: ignore[no-untyped-def]
    """Creates a smart account for a fresh EOA and deposits ``amount`` USDC units to it."""

    def make(amount: int = 1_000 * 10**6, headers: dict[str, str] | None = None) -> Funded:
        headers = headers or keyed
        eoa = to_checksum_address(f"0x{next(_eoas):040x}")
        response = api.request(
            "POST", "/api/v1/proxy/zerodev/smart-accounts", {"eoa": eoa, "chain": 8453}, headers
        )
        assert response.status == 200, response.body
        wallet = response.json()["smartAccount"]
        transfer = world.deposit_from(8453, USDC, eoa, wallet, amount)
        return Funded(eoa, wallet, transfer.tx_hash, headers)

    return make


@pytest.fixture
def activated(api: RunningService, fund):  # type: ignore[no-untyped-def]
    """An activated wallet with 1,000 USDC."""
    funded = fund()
    response = api.request("POST", "/api/v1/8453/wallets", funded.activation(), funded.headers)
    assert response.status == 201, response.body
    return funded


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Prints the requests the contract tests made per operation, by status.

    test_contract.py records them as a user property of each test's report, which
    pytest-xdist carries from its workers to this summary.
    """
    answered: dict[str, Counter[int]] = {}
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            for name, value in getattr(report, "user_properties", ()):
                if name != REPORT_PROPERTY:
                    continue
                for label, statuses in value.items():
                    answered.setdefault(label, Counter()).update(
                        {int(status): count for status, count in statuses.items()}
                    )
    if not answered:
        return
    total = sum(sum(statuses.values()) for statuses in answered.values())
    terminalreporter.write_line(f"schemathesis: {total} requests; per operation, by status:")
    for label, statuses in sorted(answered.items()):
        shown = " ".join(f"{status}x{count}" for status, count in sorted(statuses.items()))
        terminalreporter.write_line(f"  {sum(statuses.values()):5d}  {label}  ({shown})")
