"""The local key answers the signer port as eth_account signs, and never shows the key."""

from __future__ import annotations

import pickle
import threading
from typing import Any

import pytest
from eth_account import Account
from eth_account.datastructures import SignedTransaction
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount
from eth_account.typed_transactions.typed_transaction import TypedTransaction
from eth_keys.backends import get_backend
from eth_keys.backends.coincurve import CoinCurveECCBackend
from eth_keys.backends.native.main import NativeECCBackend
from eth_keys.main import KeyAPI
from hexbytes import HexBytes
from hypothesis import given, settings
from hypothesis import strategies as st

from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.domain.ports.signer import Signer

KEY = bytes.fromhex("5e" * 32)
ACCOUNT = Account.from_key(KEY)


def _tx(nonce: int, value: int, data: bytes) -> dict[str, int | str]:
    return {
        "type": 2,
        "chainId": 8453,
        "nonce": nonce,
        "to": "0x" + "22" * 20,
        "value": value,
        "data": "0x" + data.hex(),
        "gas": 90_000,
        "maxFeePerGas": 2 * 10**9,
        "maxPriorityFeePerGas": 10**8,
    }


@given(
    nonce=st.integers(0, 2**32),
    value=st.integers(0, 10**24),
    data=st.binary(max_size=96),
)
@settings(max_examples=30, deadline=None)
async def test_a_transaction_is_signed_as_eth_account_signs_it(
    nonce: int, value: int, data: bytes
) -> None:
    signer: Signer = LocalKeySigner(KEY)
    tx = _tx(nonce, value, data)
    signed = await signer.sign_transaction(tx)
    expected = Account.sign_transaction(tx, KEY)
    assert signed.raw == bytes(expected.raw_transaction)
    assert signed.tx_hash == expected.hash.to_0x_hex()
    assert Account.recover_transaction(signed.raw) == signer.address == ACCOUNT.address


async def test_a_message_is_signed_as_personal_sign() -> None:
    signer = LocalKeySigner(KEY.hex())
    signature = await signer.sign_message(b"yieldagent")
    assert len(signature) == 65
    assert Account.recover_message(encode_defunct(b"yieldagent"), signature=signature) == (
        ACCOUNT.address
    )


def test_the_key_is_in_no_repr_and_is_not_pickled() -> None:
    signer = LocalKeySigner(KEY)
    assert repr(signer) == f"LocalKeySigner(address={ACCOUNT.address!r})"
    assert KEY.hex() not in repr(signer) + str(signer)
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(signer)


def test_a_malformed_key_is_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        LocalKeySigner(b"\x01\x02")


async def test_signing_runs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    signer = LocalKeySigner(KEY)
    threads: list[int] = []
    sign = LocalAccount.sign_transaction

    def recorded(self: LocalAccount, tx: dict[str, Any]) -> SignedTransaction:
        threads.append(threading.get_ident())
        return sign(self, tx)

    monkeypatch.setattr(LocalAccount, "sign_transaction", recorded)
    await signer.sign_transaction(_tx(0, 0, b""))
    assert threads and threads[0] != threading.get_ident()


async def test_signing_uses_libsecp256k1_and_recovers_to_the_operator() -> None:
    """The lock brings coincurve, so eth-keys signs with libsecp256k1; its signature is
    checked by the other implementation, eth-keys' pure-Python one, recovering the
    operator's address from the transaction's signing hash."""
    assert isinstance(get_backend(), CoinCurveECCBackend)
    signer = LocalKeySigner(KEY)
    signed = await signer.sign_transaction(_tx(7, 10**6, b"\x01" * 64))
    typed = TypedTransaction.from_bytes(HexBytes(signed.raw))
    v, r, s = typed.vrs()
    signature = KeyAPI(NativeECCBackend).Signature(vrs=(v, r, s))
    recovered = signature.recover_public_key_from_msg_hash(typed.hash())
    assert recovered.to_checksum_address() == signer.address == ACCOUNT.address
