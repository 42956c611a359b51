"""Smart accounts of partners' users: the two providers, their records and addresses.

- ``zerodev``: a ZeroDev Kernel v3.1 account (EntryPoint v0.7). Its address mirrors the
  ZeroDev SDK's ``getKernelAddressFromECDSA`` for kernel version 0.3.1: where the Kernel
  factory will deploy an ECDSA-owned account, computed offline with CREATE2. Each agent id
  maps to its own account index, so one EOA owns a distinct account per agent.
- ``safe``: a Safe 1.4.1 owned by the EOA with the operator module enabled
  (``safe_accounts``); its address needs the chain's ``SafeAccountConstants``, which
  ``SafeChains`` holds for every chain the service can create Safe accounts on.
"""

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from eth_abi.abi import encode
from eth_utils.address import to_canonical_address, to_checksum_address
from eth_utils.crypto import keccak

from yieldagent.domain.addresses import is_address
from yieldagent.domain.errors import (
    AccessDenied,
    ChainUnavailable,
    FieldViolation,
    InvalidInput,
    NotFound,
)
from yieldagent.domain.partners.safe_accounts import SafeAccountConstants, safe_account_address
from yieldagent.domain.ports.accounts import Provider, SmartAccount, SmartAccountRepository

DEFAULT_AGENT_ID = "yield-agent"
"""Agent id used when the caller does not name one."""

_INITIALIZE_SELECTOR = keccak(text="initialize(bytes21,address,bytes,bytes,bytes[])")[:4]
_VALIDATION_TYPE_VALIDATOR = b"\x01"  # Kernel v3 ValidationType: 0x01 = validator module.
_ZERO_ADDRESS = "0x" + "00" * 20


@dataclass(frozen=True)
class KernelDeployment:
    """On-chain constants that fix where a Kernel account lands.

    Attributes:
        factory: KernelFactory that deploys accounts with CREATE2.
        implementation: Kernel implementation the account's proxy delegates to.
        ecdsa_validator: ECDSA validator module installed as the root validator.
        entry_point: ERC-4337 EntryPoint the Kernel version is built for.
        init_code_hash: keccak256 of the proxy creation code (Solady ERC-1967 proxy).
    """

    factory: str
    implementation: str
    ecdsa_validator: str
    entry_point: str
    init_code_hash: bytes


KERNEL_V3_1 = KernelDeployment(
    factory="0xaac5D4240AF87249B3f71BC8E4A2cae074A3E419",
    implementation="0xBAC849bB641841b44E965fB01A4Bf5F074f84b4D",
    ecdsa_validator="0x845ADb2C711129d4f3966735eD98a9F09fC4cE57",
    entry_point="0x0000000071727De22E5E9d8BAf0edAc6f37da032",
    init_code_hash=bytes.fromhex(
        "85d96aa1c9a65886d094915d76ccae85f14027a02c1647dde659f869460f03e6"
    ),
)
"""Kernel v3.1 on EntryPoint v0.7, as deployed at the same addresses on every chain."""


def _init_data(owner: bytes, deployment: KernelDeployment) -> bytes:
    """Calldata for ``Kernel.initialize`` with ``owner`` as the ECDSA root validator."""
    root_validator = _VALIDATION_TYPE_VALIDATOR + to_canonical_address(deployment.ecdsa_validator)
    args = encode(
        ["bytes21", "address", "bytes", "bytes", "bytes[]"],
        [root_validator, _ZERO_ADDRESS, owner, b"", []],
    )
    return _INITIALIZE_SELECTOR + args


def kernel_account_address(
    owner: str, index: int, deployment: KernelDeployment = KERNEL_V3_1
) -> str:
    """Return the EIP-55 address of the Kernel account owned by ``owner`` at ``index``.

    ``owner`` is the EOA that signs for the account (any letter case); ``index`` is the
    uint256 account nonce that lets one owner have many accounts.
    """
    if not 0 <= index < 2**256:
        raise ValueError("index must fit in uint256")
    init_data = _init_data(to_canonical_address(owner), deployment)
    salt = keccak(init_data + index.to_bytes(32, "big"))
    preimage = b"\xff" + to_canonical_address(deployment.factory) + salt + deployment.init_code_hash
    return to_checksum_address(keccak(preimage)[12:])


def agent_index(agent_id: str) -> int:
    """Account index for an agent: ``uint256(keccak256(utf8(agent_id)))``."""
    return int.from_bytes(keccak(text=agent_id), "big")


def smart_account_address(owner: str, agent_id: str = DEFAULT_AGENT_ID) -> str:
    """Return the EIP-55 address of ``owner``'s Kernel v3.1 account for ``agent_id``."""
    return kernel_account_address(owner, agent_index(agent_id))


@dataclass(frozen=True, slots=True)
class SafeChains:
    """Where Safe accounts can be created: each chain's constants, or why not.

    A chain is refused when its constants are incomplete, for example a real chain
    without a fee collector configured, or with the operator as its collector: the
    module would refuse to register such an account, and fees must never reach the
    operator key.
    """

    constants: Mapping[int, SafeAccountConstants] = field(default_factory=dict)
    refusals: Mapping[int, str] = field(default_factory=dict)

    def on(self, chain_id: int) -> SafeAccountConstants:
        """The constants of ``chain_id``; ChainUnavailable saying why there are none."""
        found = self.constants.get(chain_id)
        if found is None:
            reason = self.refusals.get(chain_id, "Safe accounts are not deployed there")
            raise ChainUnavailable(f"Cannot create Safe accounts on chain {chain_id}: {reason}")
        return found


def check_owner(account: SmartAccount, partner_id: int) -> SmartAccount:
    """Returns ``account`` if ``partner_id`` owns it; AccessDenied otherwise.

    The address depends only on the EOA and the agent id, so two partners asking
    for the same pair would share one account. The first one keeps it; the other
    is refused and can use an agent id of its own.
    """
    if account.partner_id != partner_id:
        raise AccessDenied(
            "Access denied: this smart account is managed by another partner; use another agent_id"
        )
    return account


@dataclass(frozen=True, slots=True)
class AccountKey:
    """What identifies a smart account record: chain, owner EOA and agent id."""

    chain_id: int
    eoa: str
    agent_id: str


MAX_AGENT_ID_LENGTH = 128


def account_key(eoa: str, chain: int, agent_id: str, chain_ids: Collection[int]) -> AccountKey:
    """Checks a request's fields; InvalidInput lists every malformed one."""
    violations = []
    if not eoa:
        violations.append(FieldViolation(("eoa",), "Field required", "missing"))
    elif not is_address(eoa):
        violations.append(
            FieldViolation(
                ("eoa",),
                "value is not a valid Ethereum address (0x followed by 40 hex characters)",
                "value_error.address",
            )
        )
    if chain not in chain_ids:
        allowed = ", ".join(map(str, sorted(chain_ids)))
        violations.append(
            FieldViolation(("chain",), f"Input should be one of {allowed}", "literal_error")
        )
    agent_id = agent_id or DEFAULT_AGENT_ID
    if len(agent_id) > MAX_AGENT_ID_LENGTH or not agent_id.isprintable():
        violations.append(
            FieldViolation(
                ("agent_id",),
                f"agent_id must be 1 to {MAX_AGENT_ID_LENGTH} printable characters",
                "value_error",
            )
        )
    if violations:
        raise InvalidInput(violations)
    return AccountKey(chain, to_checksum_address(eoa), agent_id)


def new_account(
    key: AccountKey,
    partner_id: int,
    provider: Provider = Provider.ZERODEV,
    safes: SafeChains | None = None,
) -> SmartAccount:
    """The account ``key`` gets from ``provider``, not recorded yet."""
    if provider == Provider.ZERODEV:
        address = smart_account_address(key.eoa, key.agent_id)
        return SmartAccount(key.chain_id, key.eoa, key.agent_id, address, partner_id)
    constants = (safes or SafeChains()).on(key.chain_id)
    address = safe_account_address(key.eoa, key.agent_id, constants)
    return SmartAccount(
        key.chain_id,
        key.eoa,
        key.agent_id,
        address,
        partner_id,
        Provider.SAFE,
        constants.fee_collector,
    )


def open_account(
    repository: SmartAccountRepository,
    key: AccountKey,
    partner_id: int,
    provider: Provider = Provider.ZERODEV,
    safes: SafeChains | None = None,
) -> SmartAccount:
    """The partner's ``provider`` account for ``key``, recorded on first use. Idempotent:
    a recorded account keeps its address even if the chain's constants change later."""
    existing = repository.get(key.chain_id, key.eoa, key.agent_id, provider)
    if existing is None:
        existing = repository.record(new_account(key, partner_id, provider, safes))
    return check_owner(existing, partner_id)


def find_account(
    repository: SmartAccountRepository,
    key: AccountKey,
    partner_id: int,
    provider: Provider = Provider.ZERODEV,
) -> SmartAccount:
    """The partner's recorded ``provider`` account for ``key``; NotFound when none was
    created."""
    existing = repository.get(key.chain_id, key.eoa, key.agent_id, provider)
    if existing is None:
        kind = "Safe account" if provider == Provider.SAFE else "smart account"
        raise NotFound(
            f"No {kind} for {key.eoa} with agent id {key.agent_id!r} on chain {key.chain_id}"
        )
    return check_owner(existing, partner_id)
