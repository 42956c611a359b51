"""WalletService: activation, the wallet record, withdrawals, deactivation, top-up,
protocols, transaction history and APR (/api/v1/{chain_id}/wallets/...)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TypeAlias

import grpc
from google.protobuf.message import Message

from yieldagent.domain.addresses import parse_address, parse_addresses, parse_tx_hash
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.amounts import parse_amount
from yieldagent.domain.books.history import Reports, WalletView
from yieldagent.domain.books.ports import EventFeed
from yieldagent.domain.books.wallets import DepositRecord, TransactionRecord
from yieldagent.domain.catalog import Catalog
from yieldagent.domain.constraints import parse_constraints
from yieldagent.domain.dates import iso, parse_iso
from yieldagent.domain.errors import InvalidInput
from yieldagent.domain.money.lifecycle import ActivationRequest, Lifecycle
from yieldagent.servicers.auth import current_partner
from yieldagent.servicers.constraints import raw_constraints
from yieldagent.servicers.events import wallet_event
from yieldagent.servicers.idempotency import current_idempotency_key
from yieldagent.servicers.method_policy import policy_for
from yieldagent.servicers.paging import pagination_message, requested_page
from yieldagent.servicers.replies import Reply, VersionedReplies
from yieldagent.servicers.rest_json import Renderer
from yieldagent.servicers.withdrawals import withdraw_detail, withdraw_response
from yieldagent.v1 import types_pb2, wallets_pb2, wallets_pb2_grpc

Context: TypeAlias = grpc.aio.ServicerContext

_GET_WALLET = wallets_pb2.DESCRIPTOR.services_by_name["WalletService"].methods_by_name["GetWallet"]


def transaction(record: TransactionRecord) -> wallets_pb2.Transaction:
    """The proto of one history transaction."""
    message = wallets_pb2.Transaction(
        action=record.action,
        date=iso(record.date),
        amount=str(record.amount),
        token_type=record.token,
        status=record.status,
        transaction_hash=record.tx_hash,
        protocol=record.protocol,
    )
    optional: dict[str, object] = {
        "new_token": record.new_token,
        "apr": record.apr,
        "block_number": record.block_number,
        "correlation_id": record.correlation_id,
        "amount_out": None if record.amount_out is None else str(record.amount_out),
    }
    for name, value in optional.items():
        if value is not None:
            setattr(message, name, value)
    return message


def deposit(record: DepositRecord) -> types_pb2.Deposit:
    """The proto of one credited deposit."""
    message = types_pb2.Deposit(
        amount=str(record.amount),
        token_type=record.token,
        date=iso(record.date),
        tx_hash=record.tx_hash or "",
    )
    if record.block_number is not None:
        message.block_number = record.block_number
    return message


def wallet_message(view: WalletView) -> wallets_pb2.Wallet:
    """The proto of a wallet record."""
    wallet = view.wallet
    current = [p for p, amount in sorted(wallet.positions.items()) if amount > 0]
    message = wallets_pb2.Wallet(
        wallet=wallet.address,
        status=str(wallet.status),
        eoa=wallet.eoa,
        selected_protocols=list(wallet.selected_protocols),
        current_protocol=current[0] if len(current) == 1 else "",
        current_protocols=current,
        current_token=wallet.token,
        activation_date=iso(wallet.activation_date),
        withdraws=[withdraw_detail(w) for w in view.withdrawals],
    )
    message.deposits.extend(deposit(d) for d in view.deposits)
    if wallet.last_deactivation_date:
        message.last_deactivation_date = iso(wallet.last_deactivation_date)
    if wallet.status_reason:
        message.status_reason = wallet.status_reason
    if wallet.withdrawable is not None:
        message.withdrawable = str(wallet.withdrawable)
    if wallet.last_reactivation_date:
        message.last_reactivation_date = iso(wallet.last_reactivation_date)
    return message


def _serialized(message: Message) -> bytes:
    serialized: bytes = message.SerializeToString()
    return serialized


class WalletServicer(wallets_pb2_grpc.WalletServiceServicer):
    """Translates WalletService calls to the wallet lifecycle and reports."""

    def __init__(
        self,
        lifecycle: Lifecycle,
        agent: Agent,
        reports: Reports,
        catalog: Catalog,
        events: EventFeed,
    ) -> None:
        self._lifecycle = lifecycle
        self._agent = agent
        self._reports = reports
        self._catalog = catalog
        self._events = events
        # Each wallet's kept reply: the message for gRPC callers, the contract's JSON for
        # REST ones (the method is served as JSON); each store bounded on its own.
        self._replies = VersionedReplies()
        self._json_replies = VersionedReplies()
        self._render_json = Renderer(policy_for(_GET_WALLET))

    async def ActivateWallet(
        self, request: wallets_pb2.ActivateWalletRequest, context: Context
    ) -> wallets_pb2.ActivateWalletResponse:
        addresses = parse_addresses(
            {"wallet": request.wallet, "eoa": request.eoa, "initial_token": request.initial_token}
        )
        if not request.selected_protocols:
            raise InvalidInput.field(
                ("selected_protocols",), "List should have at least 1 item", "too_short"
            )
        tx_hash = parse_tx_hash(request.tx_hash, ("tx_hash",)) if request.tx_hash else None
        activation = ActivationRequest(
            wallet=addresses["wallet"],
            eoa=addresses["eoa"],
            token=addresses["initial_token"],
            protocols=tuple(dict.fromkeys(request.selected_protocols)),
            tx_hash=tx_hash,
            constraints=parse_constraints(raw_constraints(request.constraints)),
        )
        wallet = await self._lifecycle.activate(
            current_partner().id, request.chain_id, activation, current_idempotency_key()
        )
        return wallets_pb2.ActivateWalletResponse(
            message="Agent activated successfully", wallet=wallet.address
        )

    async def GetWallet(self, request: wallets_pb2.GetWalletRequest, context: Context) -> Reply:
        """The wallet record, in both its kinds: the ``Wallet`` message and the contract's
        JSON. Each is answered as it was kept when built at the wallet's current version:
        the record's cost does not grow with its history."""
        address = parse_address(request.wallet, ("wallet",))
        wallet_id, version = self._reports.wallet_stamp(request.chain_id, address, request.eoa)

        def kept(replies: VersionedReplies, serialize: Callable[[Message], bytes]) -> bytes:
            reply = replies.get(wallet_id, version)
            if reply is None:
                view = self._reports.wallet_view(request.chain_id, address, request.eoa)
                reply = serialize(wallet_message(view))
                replies.put(view.wallet.id or wallet_id, view.wallet.version, reply)
            return reply

        return Reply(
            message=lambda: kept(self._replies, _serialized),
            rest_json=lambda: kept(self._json_replies, self._render_json),
        )

    async def DeactivateWallet(
        self, request: wallets_pb2.DeactivateWalletRequest, context: Context
    ) -> wallets_pb2.DeactivateWalletResponse:
        address = parse_address(request.wallet, ("wallet",))
        transfer = request.transfer if request.HasField("transfer") else True
        await self._lifecycle.deactivate(
            current_partner().id, request.chain_id, address, transfer, current_idempotency_key()
        )
        return wallets_pb2.DeactivateWalletResponse(message="Wallet deactivation initiated")

    async def Withdraw(
        self, request: wallets_pb2.WithdrawRequest, context: Context
    ) -> wallets_pb2.WithdrawResponse:
        address = parse_address(request.wallet, ("wallet",))
        amount = parse_amount(request.amount, ("amount",))
        record = await self._lifecycle.withdraw(
            current_partner().id, request.chain_id, address, amount, current_idempotency_key()
        )
        return withdraw_response(record)

    async def RunAgent(
        self, request: wallets_pb2.RunAgentRequest, context: Context
    ) -> wallets_pb2.RunAgentResponse:
        address = parse_address(request.wallet, ("wallet",))
        outcome = await self._agent.run(request.chain_id, address, current_partner().id)
        return wallets_pb2.RunAgentResponse(status=outcome.status)

    async def TopUp(
        self, request: wallets_pb2.TopUpRequest, context: Context
    ) -> wallets_pb2.TopUpResponse:
        address = parse_address(request.wallet, ("wallet",))
        if not request.tx_hash:
            raise InvalidInput.field(("tx_hash",), "Field required", "missing")
        tx_hash = parse_tx_hash(request.tx_hash, ("tx_hash",))
        await self._lifecycle.top_up(
            current_partner().id, request.chain_id, address, tx_hash, current_idempotency_key()
        )
        return wallets_pb2.TopUpResponse(message="Top-up process started")

    async def UpdateProtocols(
        self, request: wallets_pb2.UpdateProtocolsRequest, context: Context
    ) -> wallets_pb2.UpdateProtocolsResponse:
        address = parse_address(request.wallet, ("wallet",))
        await self._lifecycle.update_protocols(
            current_partner().id, request.chain_id, address, list(request.protocols)
        )
        return wallets_pb2.UpdateProtocolsResponse()

    async def ListTransactions(
        self, request: wallets_pb2.ListTransactionsRequest, context: Context
    ) -> wallets_pb2.ListTransactionsResponse:
        address = parse_address(request.wallet, ("wallet",))
        page = requested_page(request)
        items, paging = self._reports.transactions(
            current_partner().id, request.chain_id, address, page
        )
        return wallets_pb2.ListTransactionsResponse(
            transactions=[transaction(t) for t in items],
            pagination=pagination_message(paging),
        )

    async def GetApr(
        self, request: wallets_pb2.GetAprRequest, context: Context
    ) -> wallets_pb2.GetAprResponse:
        address = parse_address(request.wallet, ("wallet",))
        start = (
            parse_iso(request.start_date, ("start_date",))
            if request.HasField("start_date")
            else None
        )
        end = parse_iso(request.end_date, ("end_date",)) if request.HasField("end_date") else None
        if start and end and end <= start:
            raise InvalidInput.field(("end_date",), "end_date must be after start_date")
        wallet = self._lifecycle.wallet(request.chain_id, address)
        decimals = self._catalog.token(wallet.chain_id, wallet.token).decimals
        result = await self._reports.apr(
            current_partner().id, request.chain_id, address, start, end, request.use_exact_end_date
        )
        return wallets_pb2.GetAprResponse(
            apr=result.apr,
            sub_periods=[
                wallets_pb2.AprSubPeriod(
                    start_date=iso(p.start),
                    end_date=iso(p.end),
                    return_=p.return_,
                    initial_value=p.initial_value / 10**decimals,
                )
                for p in result.sub_periods
            ],
        )

    async def WatchWallet(
        self, request: wallets_pb2.WatchWalletRequest, context: Context
    ) -> AsyncIterator[wallets_pb2.WalletEvent]:
        address = parse_address(request.wallet, ("wallet",))
        if request.cursor < 0:
            raise InvalidInput.field(
                ("cursor",), "Input should be greater than or equal to 0", "greater_than_equal"
            )
        wallet = self._lifecycle.wallet(request.chain_id, address, current_partner().id)
        async for event in self._events.watch(wallet.id, request.cursor):
            yield wallet_event(event)
