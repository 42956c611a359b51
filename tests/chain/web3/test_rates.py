"""The issue's checks of quotes against the contracts' own rates, for every devnet pool.

1. At the block right after a pool was touched, the quote's ``apr(0)`` equals the rate the
   contracts report (Aave's ``currentLiquidityRate``; Comet's ``getSupplyRate`` of
   ``getUtilization``; Moonwell's ``supplyRatePerTimestamp``; the vault's markets' supply
   rates from Morpho's state and the IRM's ``borrowRateView``, weighted by its holding,
   net of its fee) within 1e-9 relative.
2. After a real supply of x through the smart account, the contracts' new rate equals the
   quote's ``apr(x)`` within 1e-6 relative; the quote is read an hour after the pools'
   last update, so it must bring their state to its block as their next accrual will.
"""

from __future__ import annotations

import pytest

from support.web3_chain import ChainEnv
from yieldagent.devnet.usdc import ONE_USDC
from yieldagent.domain.market.rate_models import apr_percent

pytestmark = pytest.mark.evm

PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_apr_at_zero_is_the_contracts_rate(env: ChainEnv, protocol: str) -> None:
    chain = env.chain
    touched = await chain.supply(env.account, protocol, env.token, 1_000 * ONE_USDC)
    pool = chain.pools[protocol]
    quote = await pool.quote(await chain.reader.block(touched.block_number))
    contract = apr_percent(await pool.contract_rate(touched.block_number))
    assert contract > 1.0  # borrowers make every pool pay
    assert quote.apr(0) == pytest.approx(contract, rel=1e-9)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_apr_after_a_supply_is_the_contracts_new_rate(env: ChainEnv, protocol: str) -> None:
    chain, amount = env.chain, 2_000_000 * ONE_USDC
    env.mint(env.account, amount)
    env.mine(1, seconds=3_600)  # the quote accrues an hour since each pool's last update
    [quote] = await chain.quotes(env.token, [protocol])
    supplied = await chain.supply(env.account, protocol, env.token, amount)
    after = apr_percent(await chain.pools[protocol].contract_rate(supplied.block_number))
    assert after < quote.apr(0) * 0.95  # the supply moved the rate: the check has teeth
    assert quote.apr(amount) == pytest.approx(after, rel=1e-6)
