"""What the web3 adapter must know of one chain: its token, protocols and helpers.

A ``Web3ChainConfig`` names contracts only; everything else (rate parameters, reserve
factors, market states, the tokens an Aave reserve issues, a feed's decimals) is read from
the chain. The composition root builds it from the chain's deployment manifest
(``composition.deployments.chain_config``); the adapter takes plain values and reads no file.
The pegged collaterals the depeg guard watches (``collateral_feeds``) come from the manifest
or ``YIELDAGENT_COLLATERAL_FEEDS_<chain_id>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from eth_utils.address import to_checksum_address

from yieldagent.domain.addresses import is_address
from yieldagent.domain.errors import ConfigurationError
from yieldagent.domain.partners.safe_accounts import SafeAccountConstants

DEFAULT_LOG_RANGE = 2_000
DEFAULT_CONFIRMATIONS = 1
DEFAULT_MULTICALL_BATCH = 500
DEFAULT_LOG_ADDRESS_BATCH = 500


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
    sequencer_feed: str | None = None
    """The chain's L2 sequencer uptime feed (Chainlink's), read with the collateral feeds;
    None on a chain without a sequencer (or a local devnet)."""
    multicall_batch: int = DEFAULT_MULTICALL_BATCH
    """Most calls one Multicall3 ``aggregate3`` carries."""
    log_address_batch: int = DEFAULT_LOG_ADDRESS_BATCH
    """Most accounts one ``eth_getLogs`` names in its sender or recipient topic (the
    fleet's histories and its transfer watch)."""
    head_reuse_seconds: float = 0.0
    """How long a head read is kept: reads within it are pinned to that block, and ask
    the node nothing for the head (0: every ``head()`` asks)."""

    def __post_init__(self) -> None:
        if self.log_range < 1:
            raise ConfigurationError("YIELDAGENT_LOG_RANGE must be at least 1")
        if self.multicall_batch < 1:
            raise ConfigurationError("YIELDAGENT_MULTICALL_BATCH must be at least 1")
        if self.log_address_batch < 1:
            raise ConfigurationError("YIELDAGENT_LOG_ADDRESS_BATCH must be at least 1")
        if self.confirmations < 1:
            raise ConfigurationError("YIELDAGENT_CONFIRMATIONS must be at least 1")

    def protocol(self, name: str) -> ProtocolConfig:
        """The protocol named ``name``; ConfigurationError if the chain has none."""
        for protocol in self.protocols:
            if protocol.name == name:
                return protocol
        raise ConfigurationError(f"no protocol {name!r} on chain {self.chain_id}")
