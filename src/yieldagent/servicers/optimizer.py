"""OptimizerService: the stateless optimizer (POST /api/v1/optimizer/{chain_id}/optimize)."""

from __future__ import annotations

import grpc

from yieldagent.domain.optimizer.optimize import Optimization, Optimizer
from yieldagent.domain.ports.chain import ContractCall
from yieldagent.servicers.constraints import raw_constraints
from yieldagent.v1 import optimizer_pb2, optimizer_pb2_grpc


class OptimizerServicer(optimizer_pb2_grpc.OptimizerServiceServicer):
    """Answers what the best allocation would be, on the live market, without acting."""

    def __init__(self, optimizer: Optimizer) -> None:
        self._optimizer = optimizer

    async def Optimize(
        self, request: optimizer_pb2.OptimizeRequest, context: grpc.aio.ServicerContext
    ) -> optimizer_pb2.OptimizeResponse:
        answer = await self._optimizer.optimize(
            request.chain_id,
            request.token_address,
            request.total_capital,
            request.current_allocations,
            request.protocols,
            raw_constraints(request.constraints),
            request.wallet_address if request.HasField("wallet_address") else None,
        )
        return _response(answer)


def _response(answer: Optimization) -> optimizer_pb2.OptimizeResponse:
    plan = answer.plan
    result = optimizer_pb2.OptimizationResult(
        allocations=[
            optimizer_pb2.Allocation(protocol=t.protocol, allocation=str(t.amount), apr=t.apr)
            for t in answer.targets
        ],
        total_costs=plan.gas_usd,
        weighted_apr_initial=plan.apr_before,
        weighted_apr_final=plan.apr_after,
        apr_improvement=plan.apr_improvement,
        gas_estimate_usd=plan.gas_usd,
    )
    if plan.break_even_days is not None:
        result.break_even_days = plan.break_even_days
    return optimizer_pb2.OptimizeResponse(
        optimization_result=result,
        action_plan=[
            optimizer_pb2.PlannedAction(
                action_type=m.action, protocol=m.protocol, amount=str(m.amount)
            )
            for m in plan.moves
        ],
        calldata=[_calldata(call, protocol) for protocol, call in answer.calls],
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
