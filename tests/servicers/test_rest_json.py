"""The REST JSON the service renders itself: the transcoder's JSON shaped as rest.lua
shapes it (decimal strings at integer paths as JSON integers, unset optional fields as
null), in field order, in a google.api.HttpBody. It must carry exactly the message."""

from __future__ import annotations

import json
from typing import Any

from google.api import httpbody_pb2
from google.protobuf import json_format
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.servicers.method_policy import load_policies
from yieldagent.servicers.rest_json import CONTENT_TYPE, Renderer
from yieldagent.v1 import history_pb2, types_pb2, wallets_pb2

POLICY = load_policies()["/yieldagent.v1.WalletService/GetWallet"]
RENDER = Renderer(POLICY)
HUGE = str(2**256 - 1)


def _json(reply: bytes) -> Any:
    body = httpbody_pb2.HttpBody.FromString(reply)
    assert body.content_type == CONTENT_TYPE
    return json.loads(body.data)


def test_the_wallet_read_and_the_bare_arrays_are_served_as_json() -> None:
    assert sorted(name for name, policy in load_policies().items() if policy.served_as_json) == [
        "/yieldagent.v1.HistoryService/ListWalletTokenAprs",
        "/yieldagent.v1.WalletDetailService/GetConstraints",
        "/yieldagent.v1.WalletDetailService/ListWalletProtocols",
        "/yieldagent.v1.WalletService/GetWallet",
    ]


def test_a_bare_array_method_answers_the_array_of_its_field_with_nulls() -> None:

    policy = load_policies()["/yieldagent.v1.HistoryService/ListWalletTokenAprs"]
    reply = history_pb2.ListWalletTokenAprsResponse(
        items=[history_pb2.AllocatedValue(value=2.5, value_in_usd=2.5, total_apr=4.0)]
    )
    body = httpbody_pb2.HttpBody.FromString(Renderer(policy)(reply))
    assert json.loads(body.data)[0]["total_apr"] == 4.0
    assert json.loads(body.data)[0]["base_apr"] is None
    empty = httpbody_pb2.HttpBody.FromString(
        Renderer(policy)(history_pb2.ListWalletTokenAprsResponse())
    )
    assert json.loads(empty.data) == []


def test_amounts_and_block_numbers_are_json_integers_in_every_item() -> None:
    wallet = wallets_pb2.Wallet(
        deposits=[
            types_pb2.Deposit(amount=HUGE, block_number=2**64 - 1),
            types_pb2.Deposit(amount="-5"),
        ],
        withdraws=[types_pb2.WithdrawDetail(principal_amount="7", yield_amount="not a number")],
    )
    document = _json(RENDER(wallet))
    assert [d["amount"] for d in document["deposits"]] == [2**256 - 1, -5]
    assert document["deposits"][0]["block_number"] == 2**64 - 1
    assert document["withdraws"][0]["principal_amount"] == 7
    assert document["withdraws"][0]["yield_amount"] == "not a number"
    assert document["withdraws"][0]["amount"] == ""  # not an integer path: as protobuf prints


def test_unset_optional_fields_are_null_and_set_ones_keep_their_value() -> None:
    wallet = wallets_pb2.Wallet(
        last_deactivation_date="2026-01-01T00:00:00Z",
        deposits=[types_pb2.Deposit(amount="1")],
        withdraws=[types_pb2.WithdrawDetail(tx_hash="0xh")],
    )
    document = _json(RENDER(wallet))
    assert document["last_deactivation_date"] == "2026-01-01T00:00:00Z"
    assert document["last_reactivation_date"] is None
    assert document["status_reason"] is None
    assert document["deposits"][0]["block_number"] is None
    assert document["withdraws"][0]["tx_hash"] == "0xh"
    assert document["withdraws"][0]["block_number"] is None


def test_fields_come_in_proto_order_with_the_nulls_last() -> None:
    document = _json(RENDER(wallets_pb2.Wallet(wallet="0xa", eoa="0xb")))
    present = [f.name for f in wallets_pb2.Wallet.DESCRIPTOR.fields if not f.has_presence]
    assert list(document) == [*present, *(n for n in POLICY.null_paths if "." not in n)]


_digits = st.integers(min_value=-(2**260), max_value=2**260).map(str)
_text = st.text(max_size=12)
_deposits = st.builds(
    types_pb2.Deposit,
    amount=_digits,
    token_type=_text,
    date=_text,
    tx_hash=_text,
    block_number=st.none() | st.integers(min_value=0, max_value=2**64 - 1),
)
_withdraws = st.builds(
    types_pb2.WithdrawDetail,
    token=_text,
    amount=_text,
    value=st.floats(allow_nan=False, allow_infinity=False),
    principal_amount=_digits,
    yield_amount=_digits | st.just("not a number"),
    fee_amount=_digits,
    tx_hash=st.none() | _text,
    block_number=st.none() | st.integers(min_value=0, max_value=2**64 - 1),
    date=_text,
)
_wallets = st.builds(
    wallets_pb2.Wallet,
    wallet=_text,
    status=_text,
    deposits=st.lists(_deposits, max_size=3),
    withdraws=st.lists(_withdraws, max_size=3),
    selected_protocols=st.lists(_text, max_size=3),
    last_deactivation_date=st.none() | _text,
    status_reason=st.none() | _text,
)


def _as_protobuf_json(value: Any) -> Any:
    """Undoes the shaping: JSON integers back to decimal strings, nulls dropped."""
    if isinstance(value, dict):
        return {k: _as_protobuf_json(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_as_protobuf_json(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


@given(_wallets)
def test_the_json_carries_exactly_the_message(wallet: wallets_pb2.Wallet) -> None:
    document = _json(RENDER(wallet))
    for path in POLICY.null_paths:
        head, _, leaf = path.rpartition(".")
        for item in document[head] if head else [document]:
            assert leaf in item
    assert json_format.ParseDict(_as_protobuf_json(document), wallets_pb2.Wallet()) == wallet
