"""A wallet's ``ChainBooks`` read from the devnet itself: the token's raw ``Transfer`` logs
and the contracts' own balance getters, independent of the web3 adapter."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from eth_abi.abi import decode, encode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from web3 import Web3

from support.books import ChainBooks, Movement
from yieldagent.composition.deployments import Manifest
from yieldagent.domain.books.wallets import Wallet

TRANSFER = "0x" + keccak(text="Transfer(address,address,uint256)").hex()


def _topic(address: str) -> str:
    return "0x" + "00" * 12 + address[2:].lower()


def _call(w3: Web3, contract: str, signature: str, *args: str) -> int:
    data = keccak(text=signature)[:4] + encode(["address"] * len(args), list(args))
    raw = w3.eth.call({"to": to_checksum_address(contract), "data": data})
    return int(decode(["uint256"], raw)[0])


def idle_balance(w3: Web3, token: str, holder: str) -> int:
    """``holder``'s balance of ``token``."""
    return _call(w3, token, "balanceOf(address)", holder)


def custodies(manifest: Manifest) -> dict[str, str]:
    """The address that holds the token for each protocol, by address."""
    found: dict[str, str] = {}
    for protocol in manifest.protocols:
        holder = protocol.contracts.get("a_token") if protocol.kind == "aave_v3" else None
        found[to_checksum_address(holder or protocol.address)] = protocol.name
    return found


def positions(w3: Web3, manifest: Manifest, account: str) -> dict[str, int]:
    """What ``account`` holds in each protocol, by the protocol's own getters."""
    held = {}
    for p in manifest.protocols:
        if p.kind == "aave_v3":
            held[p.name] = _call(w3, p.contracts["a_token"], "balanceOf(address)", account)
        elif p.kind == "compound_v3":
            held[p.name] = _call(w3, p.address, "balanceOf(address)", account)
        elif p.kind == "moonwell":
            held[p.name] = _call(w3, p.address, "balanceOfUnderlying(address)", account)
        else:
            shares = _call(w3, p.address, "balanceOf(address)", account)
            data = keccak(text="convertToAssets(uint256)")[:4] + encode(["uint256"], [shares])
            raw = w3.eth.call({"to": to_checksum_address(p.address), "data": data})
            held[p.name] = int(decode(["uint256"], raw)[0])
    return held


def devnet_chain_books(
    w3: Web3, manifest: Manifest, fee_collector: str, losses: Mapping[str, int] | None = None
) -> Callable[[Wallet], ChainBooks]:
    """A reader of ``ChainBooks`` for ``assert_books_balance`` on the devnet. ``losses``: the
    bad debt each account bore, by address (the test measures it where it happened: a
    vault's share price says nothing of who held it then)."""
    fee_collector = to_checksum_address(fee_collector)
    borne = {to_checksum_address(a): amount for a, amount in (losses or {}).items()}
    custody = custodies(manifest)

    def read(wallet: Wallet) -> ChainBooks:
        account = to_checksum_address(wallet.address)
        logs = w3.eth.get_logs(
            {
                "fromBlock": 0,
                "toBlock": "latest",
                "address": to_checksum_address(manifest.token),
                "topics": [TRANSFER],
            }
        )
        inflows, payouts, fees, moves = [], [], [], 0
        for log in logs:
            sender = to_checksum_address("0x" + log["topics"][1].hex()[-40:])
            recipient = to_checksum_address("0x" + log["topics"][2].hex()[-40:])
            if account not in (sender, recipient) or sender == recipient:
                continue
            movement = Movement(log["transactionHash"].to_0x_hex(), int(log["data"].hex(), 16))
            counterpart = sender if recipient == account else recipient
            if counterpart in custody:
                moves += 1
            elif recipient == account:
                inflows.append(movement)
            elif recipient == fee_collector:
                fees.append(movement)
            else:
                payouts.append(movement)
        idle = _call(w3, manifest.token, "balanceOf(address)", account)
        value = idle + sum(positions(w3, manifest, account).values())
        return ChainBooks(inflows, payouts, fees, moves, value, borne.get(account, 0))

    return read
