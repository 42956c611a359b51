"""The simulated world at genesis: each catalog pool's size, utilization and rewards.

Sizes are of the order of the real Base USDC pools in 2026; other chains are
scaled. A seed perturbs utilizations, so that chains and seeds give different,
but reproducible, markets.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from eth_utils.address import to_checksum_address

from yieldagent.chain.simulated.pools import first_step_after
from yieldagent.domain.catalog import Catalog, ProtocolInfo, TokenInfo
from yieldagent.domain.market.rate_models import RAY, model_for
from yieldagent.simulated_world.state import MarketState, PoolState


@dataclass(frozen=True, slots=True)
class RewardToken:
    """A protocol's reward token on one chain."""

    address: str
    symbol: str
    decimals: int
    price_usd: float


@dataclass(frozen=True, slots=True)
class ChainTiming:
    """How a chain numbers its blocks."""

    block_seconds: float
    genesis_block: int


TIMING = {
    1: ChainTiming(12, 21_000_000),
    137: ChainTiming(2, 66_000_000),
    8453: ChainTiming(2, 24_000_000),
    42161: ChainTiming(0.25, 290_000_000),
    84532: ChainTiming(2, 19_000_000),
    11155111: ChainTiming(12, 7_400_000),
}

REWARD_TOKENS = {
    (8453, "WELL"): RewardToken(
        to_checksum_address("0xa88594d404727625a9437c3f886c7643872296ae"), "WELL", 18, 0.03
    ),
    (8453, "MORPHO"): RewardToken(
        to_checksum_address("0xbaa5cc21fd487b8fcc2f632f3f4e8d37262a0842"), "MORPHO", 18, 1.8
    ),
    (1, "MORPHO"): RewardToken(
        to_checksum_address("0x58d97b57bb95320f9a05dc918aef65434969c2b2"), "MORPHO", 18, 1.8
    ),
}

# Whole tokens supplied at genesis, and the utilization borrow demand reverts to.
_SIZE = {"aave_v3": 120_000_000, "compound_v3": 45_000_000, "moonwell": 30_000_000}
_UTILIZATION = {"aave_v3": 0.80, "compound_v3": 0.86, "moonwell": 0.78}
_MORPHO_MARKETS = (  # a vault's markets: name, whole tokens, mean utilization
    ("cbBTC/USDC 86%", 25_000_000, 0.90),
    ("WETH/USDC 86%", 20_000_000, 0.88),
    ("wstETH/USDC 86%", 10_000_000, 0.85),
)
_CHAIN_SCALE = {1: 3.0, 137: 0.3, 8453: 1.0, 42161: 0.6, 84532: 0.01, 11155111: 0.01}
_VAULT_FEE = RAY // 10
# Reward emissions, as a yearly share of the pool's size paid in the reward token.
_REWARDS = {"moonwell": ("WELL", 0.015), "morpho_blue": ("MORPHO", 0.008)}


def _jitter(seed: int, *key: object) -> float:
    digest = hashlib.sha256(":".join(map(str, (seed, *key))).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big")).uniform(-0.04, 0.04)


def _market(
    name: str, whole: float, utilization: float, token: TokenInfo, kind: str
) -> MarketState:
    supply = int(whole * 10**token.decimals)
    return MarketState(
        name=name,
        supply=supply,
        borrows=int(supply * utilization),
        rate_at_target=model_for(kind).initial_rate_at_target(),
        mean_utilization=utilization,
        target_utilization=utilization,
    )


def genesis_pool(
    chain_id: int, token: TokenInfo, protocol: ProtocolInfo, seed: int, genesis: int
) -> PoolState:
    """The pool of ``protocol`` for ``token`` on ``chain_id`` at genesis."""
    kind = protocol.rate_model
    scale = _CHAIN_SCALE.get(chain_id, 1.0)
    if kind == "morpho_blue":
        specs = [
            (n, w, u + _jitter(seed, chain_id, protocol.name, n)) for n, w, u in _MORPHO_MARKETS
        ]
    else:
        specs = [
            (
                protocol.title,
                _SIZE[kind],
                _UTILIZATION[kind] + _jitter(seed, chain_id, protocol.name),
            )
        ]
    markets = [_market(name, whole * scale, u, token, kind) for name, whole, u in specs]
    pool = PoolState(
        chain_id=chain_id,
        protocol=protocol.name,
        token=token.address,
        kind=kind,
        fee=_VAULT_FEE if kind == "morpho_blue" else 0,
        liquidity_index=RAY,
        scaled_supply=0,
        markets=markets,
        updated_at=genesis,
        next_step=first_step_after(genesis),
    )
    reward = _REWARDS.get(kind)
    if reward and (chain_id, reward[0]) in REWARD_TOKENS:
        reward_token = REWARD_TOKENS[(chain_id, reward[0])]
        yearly_usd = pool.total_supply() / 10**token.decimals * token.price_usd * reward[1]
        per_second = yearly_usd / reward_token.price_usd / 31_536_000
        pool.reward_token = reward_token.address
        pool.reward_rate = int(per_second * 10**reward_token.decimals)
    return pool


def genesis_pools(catalog: Catalog, seed: int, genesis: int) -> list[PoolState]:
    """Every pool of the catalog at genesis."""
    return [
        genesis_pool(chain_id, token, protocol, seed, genesis)
        for chain_id in catalog.chain_ids()
        for token in catalog.chain(chain_id).tokens
        for protocol in token.protocols
    ]


def reward_token(chain_id: int, address: str) -> RewardToken | None:
    """The reward token at ``address`` on ``chain_id``, if it is one."""
    for (chain, _), token in REWARD_TOKENS.items():
        if chain == chain_id and token.address == address:
            return token
    return None
