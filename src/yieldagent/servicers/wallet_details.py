"""WalletDetailService: a wallet's details at the paths the production client reads them
(/api/v1/{chain_id}/wallets/{wallet}/deposits, /fee, /limit, /protocols, /constraints,
/whitelist, /executions, /executions/{execution_id}/logs and /logs)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeAlias

import grpc
from google.protobuf import struct_pb2

from yieldagent.domain.addresses import parse_address, parse_addresses
from yieldagent.domain.books.executions import Execution, Executions, LogEntry
from yieldagent.domain.dates import iso
from yieldagent.domain.money.details import WalletDetails
from yieldagent.servicers.auth import current_partner
from yieldagent.servicers.constraints import constraint_messages, raw_constraints
from yieldagent.servicers.paging import pagination_message, requested_page
from yieldagent.servicers.wallets import deposit, transaction
from yieldagent.v1 import catalog_pb2, wallet_details_pb2, wallet_details_pb2_grpc

Context: TypeAlias = grpc.aio.ServicerContext


def _whole(amount: int, decimals: int) -> float:
    scale: int = 10**decimals
    return amount / scale


def _execution(found: Execution) -> wallet_details_pb2.Execution:
    executed = found.executed
    operation = executed.operation
    message = wallet_details_pb2.Execution(
        id=operation.id,
        execution_plan=wallet_details_pb2.ExecutionPlan(
            moves=[
                wallet_details_pb2.PlannedMove(
                    action=str(m.action), protocol=m.protocol, amount=str(m.amount)
                )
                for m in found.plan
            ]
        ),
        execution_type=str(operation.kind),
        status=found.status,
        created_at=iso(executed.started_at),
        transactions=[transaction(t) for t in found.transactions],
        outcome=str(operation.status),
        reason=operation.reason,
    )
    if executed.finished_at is not None:
        message.finished_at = iso(executed.finished_at)
    return message


def _log(entry: LogEntry) -> wallet_details_pb2.LogEntry:
    data = struct_pb2.Struct()
    data.update(dict(entry.data))
    return wallet_details_pb2.LogEntry(type=entry.type, data=data)


class WalletDetailServicer(wallet_details_pb2_grpc.WalletDetailServiceServicer):
    """Translates WalletDetailService calls to the wallet details and executions use
    cases."""

    def __init__(
        self,
        details: WalletDetails,
        executions: Executions,
        protocols: Callable[[int, str], Awaitable[list[catalog_pb2.Protocol]]],
    ) -> None:
        self._details = details
        self._executions = executions
        self._protocols = protocols

    async def ListDeposits(
        self, request: wallet_details_pb2.ListDepositsRequest, context: Context
    ) -> wallet_details_pb2.ListDepositsResponse:
        address = parse_address(request.wallet, ("wallet",))
        found = self._details.deposits(current_partner().id, request.chain_id, address)
        return wallet_details_pb2.ListDepositsResponse(deposits=[deposit(d) for d in found])

    async def GetFee(
        self, request: wallet_details_pb2.GetFeeRequest, context: Context
    ) -> wallet_details_pb2.GetFeeResponse:
        address = parse_address(request.wallet, ("wallet",))
        found = self._details.fee(current_partner().id, request.chain_id, address)
        return wallet_details_pb2.GetFeeResponse(
            percentage_fee=found.fraction,
            fee=_whole(found.due, found.token.decimals),
            fee_amount=str(found.due),
            charged_amount=str(found.charged),
            token=found.token.address,
        )

    async def GetDepositLimit(
        self, request: wallet_details_pb2.GetDepositLimitRequest, context: Context
    ) -> wallet_details_pb2.GetDepositLimitResponse:
        parsed = parse_addresses({"wallet": request.wallet, "eoa": request.eoa})
        found = self._details.deposit_limit(
            current_partner().id, request.chain_id, parsed["wallet"], parsed["eoa"]
        )
        return wallet_details_pb2.GetDepositLimitResponse(
            limit=str(found.amount), limit_usd=found.usd, token=found.token.address
        )

    async def ListWalletProtocols(
        self, request: wallet_details_pb2.ListWalletProtocolsRequest, context: Context
    ) -> wallet_details_pb2.ListWalletProtocolsResponse:
        address = parse_address(request.wallet, ("wallet",))
        token, chosen = self._details.protocols(current_partner().id, request.chain_id, address)
        listing = {p.name: p for p in await self._protocols(request.chain_id, token)}
        return wallet_details_pb2.ListWalletProtocolsResponse(
            protocols=[listing[name] for name in chosen if name in listing]
        )

    async def GetConstraints(
        self, request: wallet_details_pb2.GetConstraintsRequest, context: Context
    ) -> wallet_details_pb2.GetConstraintsResponse:
        address = parse_address(request.wallet, ("wallet",))
        found = self._details.constraints(current_partner().id, request.chain_id, address)
        return wallet_details_pb2.GetConstraintsResponse(constraints=constraint_messages(found))

    async def UpdateConstraints(
        self, request: wallet_details_pb2.UpdateConstraintsRequest, context: Context
    ) -> wallet_details_pb2.UpdateConstraintsResponse:
        address = parse_address(request.wallet, ("wallet",))
        await self._details.update_constraints(
            current_partner().id,
            request.chain_id,
            address,
            raw_constraints(request.constraints),
        )
        return wallet_details_pb2.UpdateConstraintsResponse()

    async def GetWhitelist(
        self, request: wallet_details_pb2.GetWhitelistRequest, context: Context
    ) -> wallet_details_pb2.GetWhitelistResponse:
        address = parse_address(request.wallet, ("wallet",))
        found = self._details.whitelist(current_partner().id, request.chain_id, address)
        return wallet_details_pb2.GetWhitelistResponse(
            whitelist=[
                wallet_details_pb2.WhitelistEntry(
                    address=w.address, role=w.role, protocol=w.protocol
                )
                for w in found
            ]
        )

    async def ListExecutions(
        self, request: wallet_details_pb2.ListExecutionsRequest, context: Context
    ) -> wallet_details_pb2.ListExecutionsResponse:
        address = parse_address(request.wallet, ("wallet",))
        page = requested_page(request)
        found, paging = self._executions.page(current_partner().id, request.chain_id, address, page)
        return wallet_details_pb2.ListExecutionsResponse(
            executions=[_execution(e) for e in found], pagination=pagination_message(paging)
        )

    async def ListExecutionLogs(
        self, request: wallet_details_pb2.ListExecutionLogsRequest, context: Context
    ) -> wallet_details_pb2.ListExecutionLogsResponse:
        address = parse_address(request.wallet, ("wallet",))
        page = requested_page(request)
        found, paging = self._executions.logs(
            current_partner().id, request.chain_id, address, request.execution_id, page
        )
        return wallet_details_pb2.ListExecutionLogsResponse(
            logs=[_log(e) for e in found], pagination=pagination_message(paging)
        )

    async def ListWalletLogs(
        self, request: wallet_details_pb2.ListWalletLogsRequest, context: Context
    ) -> wallet_details_pb2.ListWalletLogsResponse:
        address = parse_address(request.wallet, ("wallet",))
        page = requested_page(request)
        found, paging = self._executions.wallet_logs(
            current_partner().id, request.chain_id, address, page
        )
        return wallet_details_pb2.ListWalletLogsResponse(
            logs=[_log(e) for e in found], pagination=pagination_message(paging)
        )
