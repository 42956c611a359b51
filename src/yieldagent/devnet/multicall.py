"""Multicall3 at its canonical address, deployed as Base deployed it: by its presigned
transaction.

Multicall3 is at ``0xcA11bde05977b3631167028862bE2a173976CA11`` on Base and most EVM chains.
Base got it from Multicall3's presigned deployment: a legacy transaction signed without a
chain id (so every chain accepts it), nonce 0 of the deployer ``0x05f3…63F2``, a gas price of
100 gwei and a gas limit of 1,000,000; the contract's address is CREATE's of that sender and
nonce. The devnet does the same: it gives the deployer exactly what the transaction pays
for gas (``anvil_setBalance``: someone has to) and broadcasts it.

The code comes from an npm package, ``@eth-optimism/contracts-bedrock`` (its ``Preinstalls``
library holds Multicall3's runtime code, which OP Stack chains place at the same address in
their genesis). The creation code is the constructor solc put in front of it, and with the
published signature it makes the presigned transaction. That the signature recovers to the
deployer, and the transaction hashes to Base's, proves every byte is the one production
chains ran: one byte off and the sender and hash are others.
"""

from __future__ import annotations

import re
from functools import cache

from eth_account import Account
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from hexbytes import HexBytes

from yieldagent.devnet.deployer import Deployer, DeployError
from yieldagent.devnet.toolchain import NODE_MODULES

MULTICALL3 = to_checksum_address("0xcA11bde05977b3631167028862bE2a173976CA11")
DEPLOYER = to_checksum_address("0x05f32B3cC3888453ff71B01135B34FF8e41263F2")
"""The presigned transaction's sender. Its key is known to be compromised, which harms
nothing: nonce 0 is spent by this deployment wherever Multicall3 is."""
DEPLOYMENT_HASH = "0x07471adfe8f4ec553c1199f495be97fc8be8e0626ae307281c22534460184ed1"
"""The presigned transaction's hash: the one Base mined."""
GAS_PRICE = 100 * 10**9
GAS_LIMIT = 1_000_000
SIGNATURE = (
    28,
    0xEDCE47092C0F398CEBF3FFC267F05C8E7076E3B89445E0FE50F6332273D4569B,
    0x1B0B9D000E19B24C5869B0FC3B22B0D6FA47CD63316875CBBD577D76E6FDE086,
)
"""(v, r, s) of the presigned transaction, as Multicall3's authors published it."""

PREINSTALLS = (
    NODE_MODULES / "@eth-optimism" / "contracts-bedrock" / "src" / "libraries" / "Preinstalls.sol"
)
_RUNTIME = re.compile(r'\bMultiCall3Code\s*=\s*hex"([0-9a-fA-F]+)"')


@cache
def runtime_code() -> bytes:
    """Multicall3's runtime code, from the pinned npm package."""
    try:
        source = PREINSTALLS.read_text()
    except FileNotFoundError:
        raise DeployError(f"{PREINSTALLS} is missing: run `make contracts/node_modules`") from None
    found = _RUNTIME.search(source)
    if found is None:
        raise DeployError(f"{PREINSTALLS} holds no MultiCall3Code")
    return bytes.fromhex(found.group(1))


def creation_code(runtime: bytes) -> bytes:
    """What solc compiles a contract without a constructor to: a prefix that refuses ether,
    copies the runtime behind it into memory and returns it."""
    if len(runtime) >= 1 << 16:
        raise DeployError("runtime code too long for a two-byte length")
    size = len(runtime).to_bytes(2, "big")
    prefix = b"\x60\x80\x60\x40\x52\x34\x80\x15\x61\x00\x10\x57\x60\x00\x80\xfd\x5b\x50\x61"
    prefix += size + b"\x80\x61\x00\x20\x60\x00\x39\x60\x00\xf3\xfe"
    return prefix + runtime


def _rlp_bytes(item: bytes) -> bytes:
    if len(item) == 1 and item[0] < 0x80:
        return item
    return _rlp_length(len(item), 0x80) + item


def _rlp_length(length: int, offset: int) -> bytes:
    if length < 56:
        return bytes([offset + length])
    encoded = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([offset + 55 + len(encoded)]) + encoded


def _integer(value: int) -> bytes:
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def presigned_transaction() -> bytes:
    """The presigned legacy transaction: RLP of (nonce 0, gas price, gas limit, no
    recipient, no value, the creation code, v, r, s); checked against its sender and hash."""
    v, r, s = SIGNATURE
    fields: list[int | bytes] = [
        0,
        GAS_PRICE,
        GAS_LIMIT,
        b"",
        0,
        creation_code(runtime_code()),
        v,
        r,
        s,
    ]
    payload = b"".join(
        _rlp_bytes(field if isinstance(field, bytes) else _integer(field)) for field in fields
    )
    raw = _rlp_length(len(payload), 0xC0) + payload
    sender = Account.recover_transaction(raw)
    if sender != DEPLOYER or "0x" + keccak(raw).hex() != DEPLOYMENT_HASH:
        raise DeployError(
            f"{PREINSTALLS} does not hold the Multicall3 production chains run: its presigned "
            f"deployment recovers to {sender}, not {DEPLOYER}"
        )
    return raw


def deploy_multicall3(d: Deployer) -> str:
    """Multicall3 at its canonical address: broadcast as on Base, or left alone when the
    chain has it already (a fork of a production chain); a different contract there is an
    error."""
    code = bytes(d.w3.eth.get_code(MULTICALL3))
    if code:
        if code != runtime_code():
            raise DeployError(f"{MULTICALL3} holds other code than Multicall3")
        return MULTICALL3
    raw = presigned_transaction()
    if d.w3.eth.get_transaction_count(DEPLOYER) != 0:
        raise DeployError(f"{DEPLOYER} has used nonce 0: Multicall3 cannot land at {MULTICALL3}")
    d.fund(DEPLOYER, max(d.w3.eth.get_balance(DEPLOYER), GAS_PRICE * GAS_LIMIT))
    tx_hash = d.w3.eth.send_raw_transaction(raw)
    receipt = d.w3.eth.wait_for_transaction_receipt(HexBytes(tx_hash), timeout=60)
    created = receipt.get("contractAddress")
    if receipt["status"] != 1 or created is None or to_checksum_address(created) != MULTICALL3:
        raise DeployError(f"the presigned Multicall3 deployment {tx_hash.to_0x_hex()} failed")
    if bytes(d.w3.eth.get_code(MULTICALL3)) != runtime_code():
        raise DeployError(f"{MULTICALL3} holds other code than Multicall3 after its deployment")
    return MULTICALL3
