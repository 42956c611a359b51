"""OptimizerService: the stateless optimizer (POST /api/v1/optimizer/{chain_id}/optimize)."""

from __future__ import annotations

from collections.abc import Mapping

import grpc

from yieldagent.domain.addresses import parse_address
from yieldagent.domain.amounts import parse_amount
from yieldagent.domain.catalog import Catalog
from yieldagent.domain.constraints import parse_constraints
from yieldagent.domain.errors import InvalidInput, InvalidRequest, NotFound
from yieldagent.domain.optimizer.curves import Candidate
from yieldagent.domain.optimizer.rebalance import Costs, Thresholds, optimize
from yieldagent.domain.ports.chain import ChainKind, ChainPort, ContractCall
from yieldagent.servicers.wallets import raw_constraints
from yieldagent.v1 import optimizer_pb2, optimizer_pb2_grpc


class OptimizerServicer(optimizer_pb2_grpc.OptimizerServiceServicer):
    """Answers what the best allocation would be, on the live market, without acting."""

    def __init__(
        self, catalog: Catalog, chains: Mapping[int, ChainPort], thresholds: Thresholds
    ) -> None:
        self._catalog = catalog
        self._chains = chains
        self._thresholds = thresholds

    async def Optimize(
        self, request: optimizer_pb2.OptimizeRequest, context: grpc.aio.ServicerContext
    ) -> optimizer_pb2.OptimizeResponse:
        total = parse_amount(request.total_capital, ("total_capital",), minimum=0)
        current = {
            name: parse_amount(amount, ("current_allocations", name), minimum=0)
            for name, amount in request.current_allocations.items()
        }
        address = parse_address(request.token_address, ("token_address",))
        try:
            token = self._catalog.token(request.chain_id, address)
        except NotFound as missing:
            if missing.detail.startswith("Chain"):
                raise
            raise InvalidRequest(missing.detail) from None
        protocols = list(dict.fromkeys(request.protocols)) or [p.name for p in token.protocols]
        self._catalog.check_protocols(token, [*protocols, *current])
        rules = parse_constraints(raw_constraints(request.constraints))
        idle = total - sum(current.values())
        if idle < 0:
            raise InvalidInput.field(
                ("total_capital",), "Input should be at least the sum of current_allocations"
            )
        chain = self._chains[request.chain_id]
        quotes = {q.protocol: q for q in await chain.quotes(address, [*protocols, *current])}
        candidates = [Candidate(p, quotes[p], current.get(p, 0)) for p in protocols]
        gas = await chain.gas_cost(ChainKind.SUPPLY)
        plan = optimize(
            current,
            idle,
            candidates,
            rules,
            Costs(gas.usd, token.price_usd, token.decimals),
            self._thresholds,
        )
        result = optimizer_pb2.OptimizationResult(
            allocations=[
                optimizer_pb2.Allocation(
                    protocol=name,
                    allocation=str(amount),
                    apr=quotes[name].apr(amount - current.get(name, 0)),
                )
                for name, amount in sorted(plan.target.items())
            ],
            total_costs=plan.gas_usd,
            weighted_apr_initial=plan.apr_before,
            weighted_apr_final=plan.apr_after,
            apr_improvement=plan.apr_improvement,
            gas_estimate_usd=plan.gas_usd,
        )
        if plan.break_even_days is not None:
            result.break_even_days = plan.break_even_days
        calldata = []
        if request.HasField("wallet_address"):
            holder = parse_address(request.wallet_address, ("wallet_address",))
            for move in plan.moves:
                calls = await chain.plan_calls(
                    holder, move.action, move.protocol, address, move.amount
                )
                calldata += [_calldata(call, move.protocol) for call in calls]
        return optimizer_pb2.OptimizeResponse(
            optimization_result=result,
            action_plan=[
                optimizer_pb2.PlannedAction(
                    action_type=m.action, protocol=m.protocol, amount=str(m.amount)
                )
                for m in plan.moves
            ],
            calldata=calldata,
        )


def _calldata(call: ContractCall, protocol: str) -> optimizer_pb2.Calldata:
    return optimizer_pb2.Calldata(
        contract_address=call.contract,
        function_name=call.function,
        parameters=call.arguments,
        value=str(call.value),
        protocol=protocol,
        description=call.description,
        data=call.data,
    )
