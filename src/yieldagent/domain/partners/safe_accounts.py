"""Counterfactual addresses of yieldagent's Safe 1.4.1 accounts, computed offline.

A user's account is a ``SafeProxy`` that the canonical ``SafeProxyFactory`` deploys with
``createProxyWithNonce(singleton, initializer, saltNonce)``:

- ``initializer`` is ``Safe.setup(owners=[eoa], threshold=1, to=module_setup,
  data=setUp(module, token, fee_collector), fallbackHandler, paymentToken=0, payment=0,
  paymentReceiver=0)``. The set-up step, delegatecalled from the new Safe, enables the
  operator module and asks it to register the account (its owner, token and fee
  collector); a refusal leaves the Safe its owner's alone, never undeployable;
- ``saltNonce = uint256(keccak256(abi.encode(keccak256("yieldagent.safe-account.v1"),
  chainId, keccak256(utf8(agent_id)))))``: one account per agent, and a different address on
  each chain even where every constant is the same (the EOA is in the initializer);
- the address is ``CREATE2(factory, keccak256(keccak256(initializer) ‖ saltNonce),
  proxyCreationCode ‖ uint256(singleton))``.

Everything that fixes the address besides the EOA and the agent is in ``SafeAccountConstants``
(one per chain). Pure: no RPC, only keccak and ABI encoding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eth_abi.abi import encode
from eth_utils.address import to_canonical_address, to_checksum_address
from eth_utils.crypto import keccak

SALT_DOMAIN = keccak(text="yieldagent.safe-account.v1")
"""The first word of every salt nonce: the formula's name and version."""

SAFE_L2_1_4_1 = "0x29fcB43b46531BcA003ddC8FCB67FFE91900C762"
SAFE_PROXY_FACTORY_1_4_1 = "0x4e1DCf7AD4e460CfD30791CCC4F9c8a4f820ec67"
COMPATIBILITY_FALLBACK_HANDLER_1_4_1 = "0xfd0732Dc9E303f09fCEf3a7388Ad10A83459Ec99"
MULTI_SEND_CALL_ONLY_1_4_1 = "0x9641d764fc13c8B624c04430C7356C1C7C8102e2"
"""Safe 1.4.1's canonical addresses (the same on every chain that has Safe)."""

SAFE_PROXY_CREATION_CODE = bytes.fromhex(
    "608060405234801561001057600080fd5b506040516101e63803806101e68339818101604052602081101561"
    "003357600080fd5b8101908080519060200190929190505050600073ffffffffffffffffffffffffffffffff"
    "ffffffff168173ffffffffffffffffffffffffffffffffffffffff1614156100ca576040517f08c379a00000"
    "000000000000000000000000000000000000000000000000000081526004018080602001828103825260228152"
    "602001806101c46022913960400191505060405180910390fd5b806000806101000a81548173ffffffffffff"
    "ffffffffffffffffffffffffffff021916908373ffffffffffffffffffffffffffffffffffffffff160217905550"
    "5060ab806101196000396000f3fe608060405273ffffffffffffffffffffffffffffffffffffffff600054167f"
    "a619486e0000000000000000000000000000000000000000000000000000000060003514156050578060005260"
    "206000f35b3660008037600080366000845af43d6000803e60008114156070573d6000fd5b3d6000f3fea2646970"
    "66735822122003d1488ee65e08fa41e58e888a9865554c535f2c77126a82cb4c0f917f31441364736f6c634300"
    "07060033496e76616c69642073696e676c65746f6e20616464726573732070726f7669646564"
)
"""``SafeProxyFactory.proxyCreationCode()`` of Safe 1.4.1 (``SafeProxy``'s creation code)."""

_SETUP = keccak(text="setup(address[],uint256,address,bytes,address,address,uint256,address)")[:4]
_SET_UP = keccak(text="setUp(address,address,address)")[:4]
_CREATE_PROXY = keccak(text="createProxyWithNonce(address,bytes,uint256)")[:4]
_ZERO = "0x" + "00" * 20
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


@dataclass(frozen=True)
class SafeAccountConstants:
    """What fixes a chain's account addresses besides the owner and the agent.

    Attributes:
        chain_id: the chain (part of the salt nonce).
        factory: the ``SafeProxyFactory`` (1.4.1: ``SAFE_PROXY_FACTORY_1_4_1``).
        singleton: the Safe the proxy delegates to (on L2s such as Base: ``SafeL2``).
        fallback_handler: the Safe's fallback handler (``CompatibilityFallbackHandler``).
        module_setup: ``OperatorModuleSetup``, delegatecalled by ``Safe.setup``.
        module: the ``OperatorModule`` enabled at set-up.
        token: the account's stablecoin, registered with the module.
        fee_collector: where the module lets fees go for this account; never the operator
            (the module refuses to register the account otherwise) and never zero.
    """

    chain_id: int
    factory: str
    singleton: str
    fallback_handler: str
    module_setup: str
    module: str
    token: str
    fee_collector: str

    def __post_init__(self) -> None:
        for name in ("factory", "singleton", "fallback_handler", "module_setup", "module"):
            _require_address(name, getattr(self, name))
        _require_address("token", self.token)
        _require_address("fee_collector", self.fee_collector)
        if self.chain_id <= 0:
            raise ValueError(f"chain_id must be positive, not {self.chain_id}")


def _require_address(name: str, value: str) -> None:
    if _ADDRESS.fullmatch(value) is None or int(value, 16) == 0:
        raise ValueError(f"{name} must be a non-zero 0x address, not {value!r}")


def salt_nonce(chain_id: int, agent_id: str) -> int:
    """The ``saltNonce`` of ``agent_id``'s account on ``chain_id`` (see the module docstring)."""
    agent = keccak(text=agent_id)
    return int.from_bytes(
        keccak(encode(["bytes32", "uint256", "bytes32"], [SALT_DOMAIN, chain_id, agent])), "big"
    )


def setup_data(constants: SafeAccountConstants) -> bytes:
    """``OperatorModuleSetup.setUp(module, token, fee_collector)`` calldata."""
    args = [constants.module, constants.token, constants.fee_collector]
    return _SET_UP + encode(
        ["address", "address", "address"], [to_canonical_address(a) for a in args]
    )


def initializer(owner: str, constants: SafeAccountConstants) -> bytes:
    """``Safe.setup`` calldata for ``owner``'s account (threshold 1, no payment)."""
    _require_address("owner", owner)
    return _SETUP + encode(
        ["address[]", "uint256", "address", "bytes", "address", "address", "uint256", "address"],
        [
            [to_canonical_address(owner)],
            1,
            to_canonical_address(constants.module_setup),
            setup_data(constants),
            to_canonical_address(constants.fallback_handler),
            to_canonical_address(_ZERO),
            0,
            to_canonical_address(_ZERO),
        ],
    )


def create_proxy_calldata(owner: str, agent_id: str, constants: SafeAccountConstants) -> bytes:
    """The calldata of the factory call that deploys the account:
    ``createProxyWithNonce(singleton, initializer, saltNonce)``."""
    return _CREATE_PROXY + encode(
        ["address", "bytes", "uint256"],
        [
            to_canonical_address(constants.singleton),
            initializer(owner, constants),
            salt_nonce(constants.chain_id, agent_id),
        ],
    )


def safe_account_address(owner: str, agent_id: str, constants: SafeAccountConstants) -> str:
    """The EIP-55 address the factory deploys ``owner``'s account for ``agent_id`` to."""
    nonce = salt_nonce(constants.chain_id, agent_id)
    salt = keccak(keccak(initializer(owner, constants)) + nonce.to_bytes(32, "big"))
    deployment = SAFE_PROXY_CREATION_CODE + encode(
        ["address"], [to_canonical_address(constants.singleton)]
    )
    factory = to_canonical_address(constants.factory)
    return to_checksum_address(keccak(b"\xff" + factory + salt + keccak(deployment))[12:])
