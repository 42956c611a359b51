"""WalletDetailService: a wallet's details at the paths the production client reads them
(/api/v1/{chain_id}/wallets/{wallet}/fee, /limit, ...)."""

from __future__ import annotations

from typing import TypeAlias

import grpc

from yieldagent.domain.addresses import parse_address, parse_addresses
from yieldagent.domain.money.details import WalletDetails
from yieldagent.servicers.auth import current_partner
from yieldagent.v1 import wallet_details_pb2, wallet_details_pb2_grpc

Context: TypeAlias = grpc.aio.ServicerContext


def _whole(amount: int, decimals: int) -> float:
    scale: int = 10**decimals
    return amount / scale


class WalletDetailServicer(wallet_details_pb2_grpc.WalletDetailServiceServicer):
    """Translates WalletDetailService calls to the wallet details use case."""

    def __init__(self, details: WalletDetails) -> None:
        self._details = details

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
