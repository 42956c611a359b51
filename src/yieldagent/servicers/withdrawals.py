"""A withdrawal (``domain.books.wallets.WithdrawalRecord``) as the contract's messages: one
in the wallet record's list, and a withdrawal call's reply. The ``Withdrawn`` event's
message is read from the event's data, which ``domain.books.effects`` writes from the
same record."""

from __future__ import annotations

from yieldagent.domain.books.wallets import WithdrawalRecord
from yieldagent.domain.dates import iso
from yieldagent.v1 import types_pb2, wallets_pb2


def withdraw_detail(record: WithdrawalRecord) -> types_pb2.WithdrawDetail:
    """The proto of one withdrawal."""
    detail = types_pb2.WithdrawDetail(
        token=record.token,
        amount=str(record.amount),
        value=record.value,
        value_in_usd=record.value_in_usd,
        principal_amount=str(record.principal),
        yield_amount=str(record.yield_),
        fee_amount=str(record.fee),
        date=iso(record.date),
    )
    if record.tx_hash is not None:
        detail.tx_hash = record.tx_hash
    if record.block_number is not None:
        detail.block_number = record.block_number
    return detail


def withdraw_response(record: WithdrawalRecord) -> wallets_pb2.WithdrawResponse:
    """The reply to a withdrawal call."""
    return wallets_pb2.WithdrawResponse(
        date=iso(record.date),
        total_value=record.value,
        total_value_in_usd=record.value_in_usd,
        withdraw_details=[withdraw_detail(record)],
    )
