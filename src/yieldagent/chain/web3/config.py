"""What the web3 adapter must know of one chain: its token, protocols and helpers.

A ``Web3ChainConfig`` names contracts only; everything else (rate parameters, reserve
factors, market states, the tokens an Aave reserve issues, a feed's decimals) is read from
the chain. It is built from the devnet's manifest (``from_manifest``) or, for a production
RPC, written from the catalog's addresses. The pegged collaterals the depeg guard watches
(``collateral_feeds``) come from the manifest or ``YIELDAGENT_COLLATERAL_FEEDS_<chain_id>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from eth_utils.address import to_checksum_address

from yieldagent.domain.addresses import is_address
from yieldagent.domain.errors import ConfigurationError
from yieldagent.domain.partners.safe_accounts import SafeAccountConstants

DEFAULT_LOG_RANGE = 2_000
DEFAULT_CONFIRMATIONS = 1


@dataclass(frozen=True, slots=True)
class ProtocolConfig:
    """One protocol's pool for the chain's token."""

    name: str
    """The catalog's name (``aave``, ``compound``, ``moonwell``, a Morpho vault's name)."""
    kind: str
    """Its rate model: ``aave_v3``, ``compound_v3``, ``moonwell`` or ``morpho_blue``."""
    address: str
    """What an account supplies to: the Aave Pool, the Comet, the mToken, the vault."""
    contracts: Mapping[str, str] = field(default_factory=dict)
    """Other contracts by role (``rewards`` for a Comet, ``morpho`` and ``irm`` for a vault)."""
    markets: tuple[str, ...] = ()
    """A vault's Morpho Blue market ids (0x-prefixed hex), in its withdrawal order."""
    title: str = ""
    """The pool's display name (a single-market pool names its market so)."""


@dataclass(frozen=True, slots=True)
class CollateralFeedConfig:
    """A pegged collateral a pool may lend against, and the price feed the depeg guard
    reads for it: Chainlink's AggregatorV3 (``latestRoundData``, ``decimals``)."""

    token: str
    feed: str
    peg: Fraction
    """What the feed answers at par, in its own currency (1 for a dollar stable on a USD
    feed)."""

    @classmethod
    def of(cls, token: str, feed: str, peg: str) -> CollateralFeedConfig:
        """The feed of ``token`` at ``feed``, pegged at ``peg`` (a decimal number)."""
        for role, value in (("collateral", token), ("feed", feed)):
            if not is_address(value):
                raise ConfigurationError(f"collateral feed: {role} {value!r} is not an address")
        try:
            par = Fraction(peg)
        except (ValueError, ZeroDivisionError):
            raise ConfigurationError(f"collateral feed of {token}: peg {peg!r}") from None
        if par <= 0:
            raise ConfigurationError(f"collateral feed of {token}: the peg must be above 0")
        return cls(to_checksum_address(token), to_checksum_address(feed), par)


@dataclass(frozen=True, slots=True)
class Web3ChainConfig:
    """One chain as the web3 adapter serves it."""

    chain_id: int
    token: str
    """The wallets' token (USDC)."""
    token_symbol: str
    token_decimals: int
    protocols: tuple[ProtocolConfig, ...]
    reward_token: str | None = None
    reward_symbol: str = "COMP"
    reward_decimals: int = 18
    reward_price_usd: float | None = None
    """None: priced through the swap router against the token."""
    swap_router: str | None = None
    module: str | None = None
    """The Safe operator module: the service acts for Safe accounts only through it."""
    safe: SafeAccountConstants | None = None
    """What new Safe accounts are deployed with (None: the service deploys none here)."""
    token_price_usd: float = 1.0
    native_price_usd: float = 3000.0
    confirmations: int = DEFAULT_CONFIRMATIONS
    """Blocks an event needs (its own included) before the books take it as final: the
    head's ``final`` block lags the latest by ``confirmations - 1``."""
    log_range: int = DEFAULT_LOG_RANGE
    """Most blocks one ``eth_getLogs`` covers."""
    collateral_feeds: tuple[CollateralFeedConfig, ...] = ()
    """The pegged collaterals whose feeds the depeg guard reads, wherever a pool lends
    against them (a Morpho vault's markets)."""

    def __post_init__(self) -> None:
        if self.log_range < 1:
            raise ConfigurationError("YIELDAGENT_LOG_RANGE must be at least 1")
        if self.confirmations < 1:
            raise ConfigurationError("YIELDAGENT_CONFIRMATIONS must be at least 1")

    def protocol(self, name: str) -> ProtocolConfig:
        """The protocol named ``name``; ConfigurationError if the chain has none."""
        for protocol in self.protocols:
            if protocol.name == name:
                return protocol
        raise ConfigurationError(f"no protocol {name!r} on chain {self.chain_id}")

    @classmethod
    def from_manifest(cls, manifest: Any, **overrides: Any) -> Web3ChainConfig:
        """The config of a devnet from its ``yieldagent.devnet.manifest.Manifest``."""
        protocols = tuple(
            ProtocolConfig(
                name=p.name,
                kind=p.kind,
                address=to_checksum_address(p.address),
                contracts={k: _maybe_address(v) for k, v in p.contracts.items()},
                markets=tuple(p.markets),
            )
            for p in manifest.protocols
        )
        values: dict[str, Any] = {
            "chain_id": manifest.chain_id,
            "token": to_checksum_address(manifest.token),
            "token_symbol": manifest.token_symbol,
            "token_decimals": manifest.token_decimals,
            "protocols": protocols,
            "reward_token": _address(manifest.reward_token),
            "swap_router": _address(manifest.swap_router),
            "module": _address(manifest.safe.module) if manifest.safe is not None else None,
            "collateral_feeds": tuple(
                CollateralFeedConfig.of(token, feed["feed"], feed["peg"])
                for token, feed in sorted(getattr(manifest, "collateral_feeds", {}).items())
            ),
        }
        values.update(overrides)
        return cls(**values)


def _address(value: str | None) -> str | None:
    if not value or int(value, 16) == 0:
        return None
    return to_checksum_address(value)


def _maybe_address(value: str) -> str:
    return to_checksum_address(value) if is_address(value) else value
