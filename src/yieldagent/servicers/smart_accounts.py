"""SmartAccountService: POST and GET /api/v1/proxy/{zerodev,safe}/smart-accounts."""

from __future__ import annotations

import grpc

from yieldagent.domain.catalog import Catalog
from yieldagent.domain.partners.smart_accounts import (
    SafeChains,
    account_key,
    find_account,
    open_account,
)
from yieldagent.domain.ports.accounts import Provider, SmartAccountRepository
from yieldagent.servicers.auth import current_partner
from yieldagent.v1 import smart_accounts_pb2 as pb
from yieldagent.v1 import smart_accounts_pb2_grpc


class SmartAccountServicer(smart_accounts_pb2_grpc.SmartAccountServiceServicer):
    """Creates and looks up the deterministic smart accounts of users' EOAs."""

    def __init__(
        self,
        catalog: Catalog,
        accounts: SmartAccountRepository,
        backend_wallet: str,
        safes: SafeChains | None = None,
    ) -> None:
        self._chain_ids = frozenset(catalog.chain_ids())
        self._accounts = accounts
        self._backend_wallet = backend_wallet
        self._safes = safes or SafeChains()

    async def CreateSmartAccount(
        self, request: pb.CreateSmartAccountRequest, context: grpc.aio.ServicerContext
    ) -> pb.CreateSmartAccountResponse:
        key = account_key(request.eoa, request.chain, request.agent_id, self._chain_ids)
        account = open_account(self._accounts, key, current_partner().id)
        return pb.CreateSmartAccountResponse(
            smartAccount=account.address, backendWallet=self._backend_wallet
        )

    async def GetSmartAccount(
        self, request: pb.GetSmartAccountRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetSmartAccountResponse:
        key = account_key(request.eoa, request.chain, request.agent_id, self._chain_ids)
        account = find_account(self._accounts, key, current_partner().id)
        return pb.GetSmartAccountResponse(
            smartAccount=account.address, backendWallet=self._backend_wallet
        )

    async def CreateSafeAccount(
        self, request: pb.CreateSafeAccountRequest, context: grpc.aio.ServicerContext
    ) -> pb.CreateSafeAccountResponse:
        key = account_key(request.eoa, request.chain, request.agent_id, self._chain_ids)
        partner = current_partner().id
        account = open_account(self._accounts, key, partner, Provider.SAFE, self._safes)
        return pb.CreateSafeAccountResponse(
            smartAccount=account.address, backendWallet=self._backend_wallet
        )

    async def GetSafeAccount(
        self, request: pb.GetSafeAccountRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetSafeAccountResponse:
        key = account_key(request.eoa, request.chain, request.agent_id, self._chain_ids)
        account = find_account(self._accounts, key, current_partner().id, Provider.SAFE)
        return pb.GetSafeAccountResponse(
            smartAccount=account.address, backendWallet=self._backend_wallet
        )
