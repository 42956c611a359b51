"""What a chain's deployment manifest claims, checked on the chain before the service starts.

The README's worst case for a stolen operator key holds only if the contracts the manifest
names are the ones this project builds: Safe 1.4.1's singleton, factory and fallback handler
(which every account's address commits to), our set-up contract and our operator module,
sealed, with a timelock of at least 48 hours, a fee bound of at most 10% and a swap bound
of at most 1%, acting for this service's key alone and administered by another. A manifest
is a file anyone with access to the host can edit; the chain is the truth. So
``check_deployment`` reads each contract's runtime code and the module's settings, in one
JSON-RPC batch (one round trip), and names every difference.

The module's immutables (its delay and bounds) sit inside its runtime code; the code is
compared with them masked (``module_code.ContractCode.masked_hash``) and their values are
checked through the module's views.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from web3 import AsyncWeb3

from yieldagent.chain.web3.abis import Fn
from yieldagent.chain.web3.module_code import ContractCode, shipped_code
from yieldagent.chain.web3.module_listing import MAX_FEE_BPS, MAX_SLIPPAGE_BPS, MIN_DELAY
from yieldagent.chain.web3.reader import RpcReader, read

IS_SEALED = Fn("isSealed()", "bool")
DELAY = Fn("delay()", "uint256")
MAX_FEE = Fn("maxFeeBps()", "uint256")
MAX_SLIPPAGE = Fn("maxSlippageBps()", "uint256")
OPERATOR = Fn("operator()", "address")
ADMIN = Fn("admin()", "address")
PENDING_ADMIN = Fn("pendingAdmin()", "address")
_VIEWS = (IS_SEALED, DELAY, MAX_FEE, MAX_SLIPPAGE, OPERATOR, ADMIN, PENDING_ADMIN)
_ZERO = "0x" + "00" * 20


@dataclass(frozen=True)
class ExpectedDeployment:
    """What a manifest names on one chain, and the key the service signs with."""

    chain_id: int
    module: str
    module_setup: str
    factory: str
    singleton: str
    fallback_handler: str
    multi_send_call_only: str
    admin: str
    operator: str
    """This service's operator key's address (not the manifest's word)."""


def _contracts(expected: ExpectedDeployment) -> list[tuple[str, str, str | ContractCode]]:
    """(manifest field, address, what its code must be) for each contract checked."""
    code = shipped_code()
    return [
        ("module", expected.module, code.module),
        ("module_setup", expected.module_setup, code.setup),
        ("singleton", expected.singleton, "SafeL2"),
        ("factory", expected.factory, "SafeProxyFactory"),
        ("fallback_handler", expected.fallback_handler, "CompatibilityFallbackHandler"),
        ("multi_send_call_only", expected.multi_send_call_only, "MultiSendCallOnly"),
    ]


async def check_deployment(w3: AsyncWeb3[Any], expected: ExpectedDeployment) -> list[str]:
    """Every way the chain differs from ``expected``, in words naming the manifest's field
    (empty: it matches). One batch of reads; a node that does not answer raises
    ``ChainUnavailable``."""
    reader = RpcReader(w3)
    contracts = _contracts(expected)
    module = to_checksum_address(expected.module)
    answers = await asyncio.gather(
        reader.request("eth_chainId", []),
        *(reader.code(address) for _, address, _ in contracts),
        *(reader.call_many([read(module, fn)], "latest") for fn in _VIEWS),
        return_exceptions=True,
    )
    for answer in answers[: 1 + len(contracts)]:
        if isinstance(answer, BaseException):
            raise answer  # the node, not the deployment: nothing can be judged
    chain_id = int(str(answers[0]), 16)
    if chain_id != expected.chain_id:
        return [f"chain: the node serves chain {chain_id}, not {expected.chain_id}"]
    problems = []
    codes: Sequence[Any] = answers[1 : 1 + len(contracts)]
    for (name, address, wanted), found in zip(contracts, codes, strict=True):
        problems += _code_problems(name, address, wanted, found)
    if problems and problems[0].startswith("module:"):
        return problems  # another contract's views say nothing of the module's
    views = {
        fn.name: (None if isinstance(a, BaseException) else a[0])
        for fn, a in zip(_VIEWS, answers[1 + len(contracts) :], strict=True)
    }
    return problems + _module_problems(expected, views)


def _code_problems(name: str, address: str, wanted: str | ContractCode, found: bytes) -> list[str]:
    if not found:
        return [f"{name}: no contract at {address}"]
    if isinstance(wanted, ContractCode):
        if wanted.masked_hash(found) != wanted.expected_hash:
            what = "OperatorModule" if name == "module" else "OperatorModuleSetup"
            return [f"{name}: the code at {address} is not the {what} this release builds"]
        return []
    if keccak(found) != shipped_code().safe[wanted]:
        return [f"{name}: the code at {address} is not Safe 1.4.1's {wanted}"]
    return []


def _module_problems(expected: ExpectedDeployment, views: dict[str, Any]) -> list[str]:
    address = expected.module
    missing = [name for name, value in views.items() if value is None]
    if missing:
        return [f"module: {address} did not answer {', '.join(missing)}"]
    problems = []
    if views["isSealed"] is not True:
        problems.append(
            f"module: {address} is not sealed: its admin can still list anything at once"
        )
    if int(views["delay"]) < MIN_DELAY:
        problems.append(f"module: delay is {views['delay']} s, below {MIN_DELAY} s (48 hours)")
    if int(views["maxFeeBps"]) > MAX_FEE_BPS:
        problems.append(
            f"module: maxFeeBps is {views['maxFeeBps']}, above {MAX_FEE_BPS} (10% of a payout)"
        )
    if int(views["maxSlippageBps"]) > MAX_SLIPPAGE_BPS:
        problems.append(
            f"module: maxSlippageBps is {views['maxSlippageBps']}, above {MAX_SLIPPAGE_BPS} "
            "(1% of a swap)"
        )
    operator = to_checksum_address(expected.operator)
    admin, pending = views["admin"], views["pendingAdmin"]
    if views["operator"] != operator:
        problems.append(
            f"operator: the module lets {views['operator']} act, not this service's key {operator}"
        )
    if admin == operator or admin == views["operator"]:
        problems.append(f"admin: the module's admin {admin} is the operator key")
    elif pending != _ZERO and pending in (operator, views["operator"]):
        problems.append(f"admin: the module's pending admin {pending} is the operator key")
    elif admin != to_checksum_address(expected.admin):
        hint = (
            f" ({pending} must call acceptAdmin)"
            if pending == to_checksum_address(expected.admin)
            else ""
        )
        problems.append(
            f"admin: the module's admin is {admin}, not the manifest's {expected.admin}{hint}"
        )
    return problems
