"""ConfigService through grpc_testing: the settings it tells, the catalog's chains, and the
admin changes pending on a chain's module, each a line with its effective time, gone once
applied."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import grpc
import grpc_testing
from sqlalchemy import Engine

from support.grpc_testing_harness import call, serve
from yieldagent.catalog import load_catalog
from yieldagent.domain.books.module_changes import told
from yieldagent.domain.constraints import KINDS
from yieldagent.domain.partners.service_config import ConfigReader, Rules
from yieldagent.domain.ports.module_changes import APPLIED, ChangeResolved, ModuleChange
from yieldagent.servicers.config import ConfigServicer
from yieldagent.storage.module_changes import ModuleChangeStore
from yieldagent.v1 import config_pb2

SERVICE = config_pb2.DESCRIPTOR.services_by_name["ConfigService"]
GET_CONFIG = SERVICE.methods_by_name["GetConfig"]
PROPOSED = datetime(2026, 12, 1, 12, tzinfo=UTC)
CHANGE = ModuleChange(
    chain_id=8453,
    module="0x" + "0a" * 20,
    change_id="0x" + "01" * 32,
    kind="rule",
    subject="0x" + "0c" * 20,
    selector="0x617ba037",
    new_value="supply",
    proposed_at=PROPOSED,
    effective_at=PROPOSED + timedelta(hours=48),
    block=100,
    log_index=3,
)


def _server(engine: Engine, rules: Rules) -> grpc_testing.Server:
    reader = ConfigReader(rules, load_catalog(), ModuleChangeStore(engine))
    return serve(ConfigServicer(reader), SERVICE)


def _config(server: grpc_testing.Server) -> config_pb2.GetConfigResponse:
    response, _, code, _ = call(server, GET_CONFIG, config_pb2.GetConfigRequest())
    assert code is grpc.StatusCode.OK
    assert isinstance(response, config_pb2.GetConfigResponse)
    return response


def test_the_config_tells_the_settings_and_the_catalog(engine: Engine) -> None:
    config = _config(_server(engine, Rules(Decimal("12.5"), 0.15, 10)))
    assert config.min_withdraw_usd == 12.5
    assert config.max_protocol_liquidity_percentage == 15.0  # exactly, from 0.15
    assert not config.HasField("optimizer_threshold_usd")  # no such rule: null
    assert config.wallet_money_calls_per_minute == 10
    assert set(config.constraints.kinds) == set(KINDS)
    assert list(config.constraints.kinds["max_amount_per_protocol"].params) == [
        "protocol",
        "max_ratio",
    ]
    assert list(config.constraints.kinds["min_protocols"].optional_params) == [
        "min_fraction_per_protocol"
    ]
    assert config.constraints.default_min_fraction_per_protocol == 0.05
    catalog = load_catalog()
    assert sorted(config.chains) == sorted(str(c) for c in catalog.chain_ids())
    base = config.chains["8453"]
    assert (base.chain_id, base.name) == (8453, catalog.chain(8453).name)
    assert list(base.tokens) == [t.address for t in catalog.chain(8453).tokens]
    assert "aave" in base.protocols
    assert list(config.pending_admin_changes) == []  # nothing read from any module


def test_a_pending_admin_change_is_a_line_until_it_is_applied(engine: Engine) -> None:
    store = ModuleChangeStore(engine)
    store.record(8453, [told(CHANGE, [])], [], 101)
    server = _server(engine, Rules(Decimal(10), 0.15, 10))

    [pending] = _config(server).pending_admin_changes
    assert (pending.chain_id, pending.change_id, pending.kind) == (8453, CHANGE.change_id, "rule")
    assert (pending.subject, pending.selector, pending.new_value) == (
        CHANGE.subject,
        "0x617ba037",
        "supply",
    )
    assert pending.proposed_at == "2026-12-01T12:00:00Z"
    assert pending.effective_at == "2026-12-03T12:00:00Z"
    assert pending.line == (
        f"Chain 8453, module {CHANGE.module}: target {CHANGE.subject} function 0x617ba037 "
        "becomes supply; the admin can apply it from 2026-12-03T12:00:00Z; until then an "
        f"account's owner may refuse it with optOut({CHANGE.change_id})"
    )

    store.record(8453, [], [ChangeResolved(CHANGE.change_id, APPLIED, 200, 0)], 201)
    assert list(_config(server).pending_admin_changes) == []
