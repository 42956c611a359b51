"""The operator module's listing: which (target, function) pairs it lets the operator call,
under which rule, and the changes that list them, tokens and the operator key.

A ``Change`` here is ``OperatorModule.Change`` as an ABI tuple, ready for ``applyChange``
(before ``seal``: the initial listing) or ``proposeChange`` (after it: through the
timelock). ``protocol_rules`` is the listing of a chain's protocols by their rate model,
the same for the devnet (``devnet/safe.py``) and for a real chain
(``yieldagent operator deploy-module``).

The bounds (``MIN_DELAY``, ``MAX_FEE_BPS``, ``MAX_SLIPPAGE_BPS``) are the ones the README's
worst case states; the module's constructor admits looser ones (fee up to 20%, slippage up
to 5%), so the service checks them on chain at start-up (``deployment_check``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Protocol

from eth_typing import ChecksumAddress
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak

from yieldagent.chain.web3.abis import Fn

DETERMINISTIC_DEPLOYER = "0x4e59b44847b379578588920cA78FbF26c0B4956C"
"""The deployment proxy production chains have (CREATE2(salt = calldata[:32]))."""
MODULE_SALT = keccak(text="yieldagent.operator-module.v1")
SETUP_SALT = keccak(text="yieldagent.operator-module-setup.v1")

MIN_DELAY = 48 * 3600
"""Seconds a change waits at least: the module's own floor (``MIN_DELAY``)."""
MAX_FEE_BPS = 1_000
"""A fee is at most 10% of a payment (owner's part + fee), as the README states."""
MAX_SLIPPAGE_BPS = 100
"""A reward swap yields at least 99% of the feeds' value, as the README states."""

ZERO_ADDRESS = "0x" + "00" * 20


class Kind(IntEnum):
    """``OperatorModule.Kind``."""

    NONE = 0
    SUPPLY = 1
    WITHDRAW = 2
    CLAIM = 3
    SWAP = 4


class ChangeKind(IntEnum):
    """``OperatorModule.ChangeKind``."""

    RULE = 0
    TOKEN = 1
    OPERATOR = 2


def selector(signature: str) -> bytes:
    """The 4-byte selector of a function signature."""
    return keccak(text=signature)[:4]


@dataclass(frozen=True)
class Rule:
    """``OperatorModule.Rule`` for one (target, function): which argument words must be the
    account, which the account's token, which is the amount (supply, swap) and which the
    reward token sold (swap); for a withdrawal, the target's view of what the account owes it
    (``debt_of``, a signature), which must answer 0 afterwards."""

    kind: Kind
    words: int
    amount_word: int = 0
    token_in_word: int = 0
    account_words: tuple[int, ...] = ()
    token_words: tuple[int, ...] = ()
    debt_of: str = ""

    def as_tuple(self) -> tuple[int, int, int, int, int, int, bytes]:
        """The ABI tuple ``(kind, words, amountWord, tokenInWord, accountWords, tokenWords,
        debtOf)``."""
        return (
            int(self.kind),
            self.words,
            self.amount_word,
            self.token_in_word,
            sum(1 << i for i in self.account_words),
            sum(1 << i for i in self.token_words),
            selector(self.debt_of) if self.debt_of else bytes(4),
        )


NO_LISTING = (ZERO_ADDRESS, 0, False)
NO_RULE = Rule(Kind.NONE, 0)

# What each protocol model's contracts may be asked, as function signature -> rule.
RULES_BY_MODEL: dict[str, dict[str, Rule]] = {
    "aave_v3": {  # the Pool: onBehalfOf and to are the account, asset its token
        "supply(address,uint256,address,uint16)": Rule(Kind.SUPPLY, 4, 1, 0, (2,), (0,)),
        "withdraw(address,uint256,address)": Rule(Kind.WITHDRAW, 3, 0, 0, (2,), (0,)),
    },
    "compound_v3": {  # the Comet credits and pays msg.sender; asset is the base token
        "supply(address,uint256)": Rule(Kind.SUPPLY, 2, 1, 0, (), (0,)),
        # beyond the balance, withdraw borrows (against collateral anyone may supply for us)
        "withdraw(address,uint256)": Rule(
            Kind.WITHDRAW, 2, 0, 0, (), (0,), "borrowBalanceOf(address)"
        ),
    },
    "moonwell": {  # the mToken credits and pays msg.sender
        "mint(uint256)": Rule(Kind.SUPPLY, 1, 0),
        "redeem(uint256)": Rule(Kind.WITHDRAW, 1),
        "redeemUnderlying(uint256)": Rule(Kind.WITHDRAW, 1),
    },
    "morpho_blue": {  # the ERC-4626 vault: receiver and owner are the account
        "deposit(uint256,address)": Rule(Kind.SUPPLY, 2, 0, 0, (1,)),
        "withdraw(uint256,address,address)": Rule(Kind.WITHDRAW, 3, 0, 0, (1, 2)),
        "redeem(uint256,address,address)": Rule(Kind.WITHDRAW, 3, 0, 0, (1, 2)),
    },
}
# CometRewards.claim(comet, src, shouldAccrue) pays src.
CLAIM_RULES = {"claim(address,address,bool)": Rule(Kind.CLAIM, 3, 0, 0, (1,))}
# SwapRouter.swap(tokenIn, tokenOut, amountIn, minOut, to): a reward into the account's token.
SWAP_RULES = {"swap(address,address,uint256,uint256,address)": Rule(Kind.SWAP, 5, 2, 0, (4,), (1,))}

Change = tuple[Any, ...]
"""``OperatorModule.Change`` as an ABI tuple: (kind, subject, selector, rule, listing)."""
CHANGE_TYPE = (
    "(uint8,address,bytes4,(uint8,uint8,uint8,uint8,uint16,uint16,bytes4),(address,uint32,bool))"
)

APPLY_CHANGE = Fn(f"applyChange({CHANGE_TYPE})")
PROPOSE_CHANGE = Fn(f"proposeChange({CHANGE_TYPE})", "bytes32")
CANCEL_CHANGE = Fn("cancelChange(bytes32)")
SEAL = Fn("seal()")
TRANSFER_ADMIN = Fn("transferAdmin(address)")


class ListedProtocol(Protocol):
    """What the listing needs of a protocol: its rate model, its entry contract and its
    other contracts by role (``rewards`` for a Comet)."""

    @property
    def kind(self) -> str: ...

    @property
    def address(self) -> str: ...

    @property
    def contracts(self) -> Mapping[str, str]: ...


def rule_change(target: str, signature: str, rule: Rule) -> Change:
    """``OperatorModule.Change`` listing ``target.signature`` under ``rule`` (``NO_RULE``
    unlists it)."""
    return (
        int(ChangeKind.RULE),
        to_checksum_address(target),
        selector(signature),
        rule.as_tuple(),
        NO_LISTING,
    )


def token_change(token: str, feed: str, max_age: int, *, reward: bool) -> Change:
    """``OperatorModule.Change`` pricing ``token`` with ``feed`` (zero address: unlists)."""
    return (
        int(ChangeKind.TOKEN),
        to_checksum_address(token),
        bytes(4),
        NO_RULE.as_tuple(),
        (to_checksum_address(feed), max_age, reward),
    )


def operator_change(operator: str) -> Change:
    """``OperatorModule.Change`` making ``operator`` the operator key."""
    return (
        int(ChangeKind.OPERATOR),
        to_checksum_address(operator),
        bytes(4),
        NO_RULE.as_tuple(),
        NO_LISTING,
    )


def protocol_rules(
    protocols: Iterable[ListedProtocol], swap_router: str | None
) -> list[tuple[str, str, Rule]]:
    """The listing of ``protocols``: (target, function signature, rule) for every
    protocol's entry contract, its rewards contract and the swap router."""
    listed: list[tuple[str, str, Rule]] = []
    for protocol in protocols:
        rules = RULES_BY_MODEL.get(protocol.kind)
        if rules is None:
            raise ValueError(f"no listing for protocols of kind {protocol.kind!r}")
        for signature, rule in rules.items():
            listed.append((protocol.address, signature, rule))
        if "rewards" in protocol.contracts:
            for signature, rule in CLAIM_RULES.items():
                listed.append((protocol.contracts["rewards"], signature, rule))
    if swap_router is not None:
        for signature, rule in SWAP_RULES.items():
            listed.append((swap_router, signature, rule))
    return listed


def initial_listing(
    protocols: Iterable[ListedProtocol],
    swap_router: str | None,
    feeds: Mapping[str, str],
    base_token: str,
    max_age: int,
    operator: str,
) -> list[Change]:
    """Every change of a module's initial listing: the protocols' rules, each token of
    ``feeds`` priced by its feed (every one but ``base_token`` a reward), then the operator."""
    base = to_checksum_address(base_token)
    changes = [rule_change(t, s, r) for t, s, r in protocol_rules(protocols, swap_router)]
    changes += [
        token_change(token, feed, max_age, reward=to_checksum_address(token) != base)
        for token, feed in feeds.items()
    ]
    changes.append(operator_change(operator))
    return changes


def create2_address(deployer: str, salt: bytes, initcode: bytes) -> ChecksumAddress:
    """Where ``deployer`` puts ``initcode`` with ``salt`` (EIP-1014)."""
    raw = keccak(b"\xff" + bytes.fromhex(deployer[2:]) + salt + keccak(initcode))[12:]
    return to_checksum_address(raw)
