"""ConfigService: the service's rules, constraints, chains and pending admin changes
(GET /api/v1/config)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import grpc

from yieldagent.domain.dates import iso
from yieldagent.domain.partners.service_config import ConfigReader, ServiceConfig, describe
from yieldagent.v1 import config_pb2, config_pb2_grpc


def _response(found: ServiceConfig) -> config_pb2.GetConfigResponse:
    rules = found.rules
    return config_pb2.GetConfigResponse(
        min_withdraw_usd=float(rules.min_withdraw_usd),
        # The share as its setting writes it (0.15 is 15, not 15.000000000000002).
        max_protocol_liquidity_percentage=float(Decimal(repr(rules.max_pool_share)) * 100),
        constraints=config_pb2.ConstraintsConfig(
            kinds={
                kind: config_pb2.ConstraintKind(
                    params=params, optional_params=found.optional_params.get(kind, ())
                )
                for kind, params in found.constraint_kinds.items()
            },
            default_min_fraction_per_protocol=found.default_min_fraction,
        ),
        chains={
            str(chain.chain_id): config_pb2.ChainConfig(
                chain_id=chain.chain_id,
                name=chain.name,
                tokens=[token.address for token in chain.tokens],
                protocols=sorted({p.name for token in chain.tokens for p in token.protocols}),
            )
            for chain in found.chains
        },
        pending_admin_changes=[
            config_pb2.PendingAdminChange(
                chain_id=change.chain_id,
                module=change.module,
                change_id=change.change_id,
                kind=change.kind,
                subject=change.subject,
                selector=change.selector,
                new_value=change.new_value,
                proposed_at=iso(change.proposed_at),
                effective_at=iso(change.effective_at),
                line=describe(change),
            )
            for change in found.pending
        ],
        wallet_money_calls_per_minute=rules.wallet_money_calls_per_minute,
    )


class ConfigServicer(config_pb2_grpc.ConfigServiceServicer):
    """Answers the configuration as the reader finds it on each call."""

    def __init__(self, reader: ConfigReader) -> None:
        self._reader = reader

    async def GetConfig(
        self, request: config_pb2.GetConfigRequest, context: grpc.aio.ServicerContext
    ) -> config_pb2.GetConfigResponse:
        # The pending changes are a query per chain: off the event loop.
        return _response(await asyncio.to_thread(self._reader.read))
