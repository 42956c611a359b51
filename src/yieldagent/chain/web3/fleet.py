"""Many wallets' funds read at one block: each holder's idle balance of the token and its
position in every pool, through Multicall3 (``multicall.Multicall``).

One pass reads every holder's balance and each pool's position read (a vault's: the
holder's shares); a second pass turns the shares of the holders that have some into the
token (``convertToAssets``). A fleet that holds no vault shares costs one pass: a JSON-RPC
request per block for as many ``aggregate3`` calls as its reads fill, whatever the
fleet's size up to what one batch request carries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eth_utils.address import to_checksum_address

from yieldagent.chain.web3.abis import BALANCE_OF
from yieldagent.chain.web3.multicall import Failed, Multicall
from yieldagent.chain.web3.protocols import LendingPool
from yieldagent.chain.web3.protocols.morpho import VaultPool
from yieldagent.chain.web3.reader import Read, read
from yieldagent.domain.ports.chain import Position

CONVERSION_WEIGHT = 10
"""A vault's ``convertToAssets`` costs about ten balance reads in gas (62,000 against
5,800-9,900 for a balance or a pool's position, measured on the devnet's vault over three
markets): its aggregates carry a tenth as many calls, so that no ``eth_call`` nears a
node's gas cap (30 M on anvil's default block)."""

Holding = tuple[int, list[Position]]
"""A holder's idle balance and its nonzero positions."""


async def holdings(
    multicall: Multicall,
    token: str,
    pools: Mapping[str, LendingPool],
    holders: Sequence[str],
    block: int,
) -> dict[str, Holding]:
    """Each of ``holders``' balance of ``token`` and positions in ``pools`` at ``block``,
    by holder as given; a holder any of whose reads failed is left out (its wallet is not
    valued this time, the others are)."""
    named = list(pools.items())
    width = 1 + len(named)
    reads: list[Read] = []
    for holder in holders:
        account = to_checksum_address(holder)
        reads.append(read(token, BALANCE_OF, account))
        reads.extend(pool.position_read(account) for _, pool in named)
    answers = await multicall.read_all(reads, block)
    vaults = [
        (h, p)
        for h in range(len(holders))
        for p, (_, pool) in enumerate(named)
        if isinstance(pool, VaultPool)
        and not isinstance(answers[h * width + 1 + p], Failed)
        and int(answers[h * width + 1 + p]) > 0
    ]
    if vaults:
        converted = await multicall.read_all(
            [_vault(named[p][1]).assets_read(int(answers[h * width + 1 + p])) for h, p in vaults],
            block,
            heavy=CONVERSION_WEIGHT,
        )
        for (h, p), assets in zip(vaults, converted, strict=True):
            answers[h * width + 1 + p] = assets
    found: dict[str, Holding] = {}
    for h, holder in enumerate(holders):
        row = answers[h * width : (h + 1) * width]
        if any(isinstance(a, Failed) for a in row):
            continue
        positions = [
            Position(name, token, int(amount))
            for (name, _), amount in zip(named, row[1:], strict=True)
            if int(amount) > 0
        ]
        found[holder] = (int(row[0]), positions)
    return found


def _vault(pool: LendingPool) -> VaultPool:
    assert isinstance(pool, VaultPool)
    return pool
