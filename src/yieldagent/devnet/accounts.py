"""Smart accounts on the devnet: the session-key policy and installing an account's code.

The account (``contracts/src/account/SmartAccount.sol``) has no constructor: its runtime code is
written at the account's address with ``anvil_setCode`` (the Kernel v3.1 address, so partners
see the production address) and its storage with ``anvil_setStorageAt``:

* slot 0: owner (the user's EOA), slot 1: session key (the backend operator),
* slot 2: the ``SessionPolicy`` contract, slots 3 and 4: the fee counters ``feesPaid`` and
  ``paidToOwner`` (left as they are by a re-install).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum
from typing import Any

from web3 import Web3
from web3.types import RPCEndpoint

from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.manifest import ProtocolDeployment
from yieldagent.devnet.toolchain import compile_project

OWNER_SLOT = 0
SESSION_KEY_SLOT = 1
POLICY_SLOT = 2
FEES_PAID_SLOT = 3
PAID_TO_OWNER_SLOT = 4
DEFAULT_MAX_FEE_BPS = 2000


class TargetKind(IntEnum):
    """``SessionPolicy.Kind``: what a listed contract is."""

    NONE = 0
    AAVE = 1
    COMET = 2
    MTOKEN = 3
    VAULT = 4
    REWARDS = 5
    ROUTER = 6


_KIND_OF_MODEL = {
    "aave_v3": TargetKind.AAVE,
    "compound_v3": TargetKind.COMET,
    "moonwell": TargetKind.MTOKEN,
    "morpho_blue": TargetKind.VAULT,
}


def policy_targets(
    protocols: Iterable[ProtocolDeployment], swap_router: str | None = None
) -> dict[str, TargetKind]:
    """The contracts a session key may call, by kind: each protocol's entry contract, a
    protocol's ``rewards`` contract, and the swap router."""
    targets: dict[str, TargetKind] = {}
    for protocol in protocols:
        targets[Web3.to_checksum_address(protocol.address)] = _KIND_OF_MODEL[protocol.kind]
        if "rewards" in protocol.contracts:
            targets[Web3.to_checksum_address(protocol.contracts["rewards"])] = TargetKind.REWARDS
    if swap_router is not None:
        targets[Web3.to_checksum_address(swap_router)] = TargetKind.ROUTER
    return targets


def deploy_policy(
    d: Deployer,
    usdc: str,
    protocols: Sequence[ProtocolDeployment],
    fee_collector: str,
    max_fee_bps: int = DEFAULT_MAX_FEE_BPS,
    *,
    swap_router: str | None = None,
    extra_tokens: Sequence[str] = (),
) -> str:
    """Deploys the ``SessionPolicy`` (admin: ``d.admin``) and returns its address.

    It lists every protocol's entry contract by kind (and a ``rewards`` contract when the
    protocol has one), the swap router, ``usdc`` (the fee token) plus ``extra_tokens`` and each
    protocol's ``reward_token``, the fee collector and ``max_fee_bps``.
    """
    artifacts = compile_project()
    token, collector = Web3.to_checksum_address(usdc), Web3.to_checksum_address(fee_collector)
    policy = d.deploy(artifacts["SessionPolicy"], token, collector, max_fee_bps)
    for target, kind in policy_targets(protocols, swap_router).items():
        d.transact(policy.functions.setTarget(target, int(kind)))
    tokens = [
        *extra_tokens,
        *(p.contracts["reward_token"] for p in protocols if "reward_token" in p.contracts),
    ]
    for token in dict.fromkeys(Web3.to_checksum_address(t) for t in tokens):
        d.transact(policy.functions.setToken(token, True))
    return str(policy.address)


def _word(address: str) -> str:
    return "0x" + address.lower().removeprefix("0x").rjust(64, "0")


def _rpc(w3: Web3, method: str, params: list[Any]) -> Any:
    response = w3.provider.make_request(RPCEndpoint(method), params)
    if "error" in response:
        raise RuntimeError(f"{method} failed: {response['error']}")
    return response.get("result")


def install_account(
    w3: Web3, account: str, owner: str, session_key: str, policy: str, runtime: str
) -> None:
    """Puts the smart account's ``runtime`` code at ``account`` with its owner, session key and
    policy (anvil only). Idempotent: installing again changes nothing, and keeps the fee
    counters."""
    address = Web3.to_checksum_address(account)
    if w3.eth.get_code(address).to_0x_hex().lower() != runtime.lower():
        _rpc(w3, "anvil_setCode", [address, runtime])
    for slot, value in (
        (OWNER_SLOT, owner),
        (SESSION_KEY_SLOT, session_key),
        (POLICY_SLOT, policy),
    ):
        _rpc(w3, "anvil_setStorageAt", [address, hex(slot), _word(value)])
