"""Aave v3 on the devnet, from the compiled artifacts ``@aave/core-v3`` (1.19.3) ships.

The order follows Aave's own deployment scripts (``@aave/deploy-v3``): the addresses provider
and its ACL, the seven logic libraries linked into the Pool, the Pool and the
PoolConfigurator behind the provider's proxies, the data provider, an AaveOracle over fixed
Chainlink-style mock feeds, the token implementations, then ``initReserves``.

Two reserves: the devnet USDC, configured like Base's USDC (rate strategy at its launch
parameters, reserve factor 10%, borrowing on, collateral 75% / 78% / 5%), and a mintable
"WETH" at a fixed $3,000 that borrowers post as collateral.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from web3.contract import Contract

from yieldagent.composition.deployments import ProtocolDeployment
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.toolchain import aave_artifact
from yieldagent.devnet.usdc import ONE_USDC, ensure_balance, usdc_artifact

RAY = 10**27
PRICE_UNIT = 10**8  # the oracle's base currency unit: USD with 8 decimals, as Chainlink's
USDC_PRICE = 1 * PRICE_UNIT
WETH_PRICE = 3_000 * PRICE_UNIT
VARIABLE = 2  # Aave's interest rate mode for variable debt
POOL_LIBRARIES = (
    "BorrowLogic",
    "BridgeLogic",
    "EModeLogic",
    "FlashLoanLogic",
    "LiquidationLogic",
    "PoolLogic",
    "SupplyLogic",
)
DEFAULT_SUPPLY = 5_000_000 * ONE_USDC  # what the devnet's supplier keeps in the reserve


@dataclass(frozen=True)
class RateStrategy:
    """The constructor parameters of a DefaultReserveInterestRateStrategy, in ray."""

    optimal_usage: int
    base_variable: int
    variable_slope1: int
    variable_slope2: int
    stable_slope1: int
    stable_slope2: int
    base_stable_offset: int
    stable_excess_offset: int
    optimal_stable_to_total_debt: int


# Base USDC at launch (reference-facts.md): optimal 0.90, base 0, slope1 0.04, slope2 0.60.
# Stable borrowing stays disabled; its slopes are only valid values.
USDC_RATES = RateStrategy(
    optimal_usage=90 * RAY // 100,
    base_variable=0,
    variable_slope1=4 * RAY // 100,
    variable_slope2=60 * RAY // 100,
    stable_slope1=5 * RAY // 1000,
    stable_slope2=60 * RAY // 100,
    base_stable_offset=1 * RAY // 100,
    stable_excess_offset=8 * RAY // 100,
    optimal_stable_to_total_debt=20 * RAY // 100,
)
WETH_RATES = RateStrategy(
    optimal_usage=80 * RAY // 100,
    base_variable=0,
    variable_slope1=33 * RAY // 1000,
    variable_slope2=80 * RAY // 100,
    stable_slope1=4 * RAY // 100,
    stable_slope2=80 * RAY // 100,
    base_stable_offset=2 * RAY // 100,
    stable_excess_offset=5 * RAY // 100,
    optimal_stable_to_total_debt=20 * RAY // 100,
)
USDC_RESERVE_FACTOR_BPS = 1_000
USDC_COLLATERAL_BPS = (7_500, 7_800, 10_500)  # LTV, liquidation threshold, bonus
WETH_COLLATERAL_BPS = (8_000, 8_300, 10_500)
WETH_RESERVE_FACTOR_BPS = 1_500


def _deploy_libraries(d: Deployer) -> dict[str, str]:
    """The Pool's logic libraries, each deployed after the libraries it links."""
    deployed: dict[str, str] = {}
    while len(deployed) < len(POOL_LIBRARIES):
        for name in POOL_LIBRARIES:
            artifact = aave_artifact(name)
            if name not in deployed and artifact.libraries() <= set(deployed):
                deployed[name] = d.deploy(artifact, libraries=deployed).address
    return deployed


def _rate_strategy(d: Deployer, provider: str, rates: RateStrategy) -> Contract:
    return d.deploy(
        aave_artifact("DefaultReserveInterestRateStrategy"),
        provider,
        rates.optimal_usage,
        rates.base_variable,
        rates.variable_slope1,
        rates.variable_slope2,
        rates.stable_slope1,
        rates.stable_slope2,
        rates.base_stable_offset,
        rates.stable_excess_offset,
        rates.optimal_stable_to_total_debt,
    )


def _reserve_input(
    implementations: tuple[str, str, str],
    asset: str,
    symbol: str,
    decimals: int,
    strategy: str,
    treasury: str,
) -> tuple[object, ...]:
    a_token, stable_debt, variable_debt = implementations
    zero = "0x" + "00" * 20
    return (
        a_token,
        stable_debt,
        variable_debt,
        decimals,
        strategy,
        asset,
        treasury,
        zero,  # no incentives controller
        f"Aave Base {symbol}",
        f"aBas{symbol}",
        f"Aave Base Variable Debt {symbol}",
        f"variableDebtBas{symbol}",
        f"Aave Base Stable Debt {symbol}",
        f"stableDebtBas{symbol}",
        b"",
    )


def deploy_aave(d: Deployer, usdc: str) -> ProtocolDeployment:
    """Deploys Aave v3 with a USDC reserve like Base's and a WETH collateral reserve."""
    admin = d.admin
    provider = d.deploy(aave_artifact("PoolAddressesProvider"), "Aave Base devnet", admin)
    d.transact(provider.functions.setACLAdmin(admin))
    acl = d.deploy(aave_artifact("ACLManager"), provider.address)
    d.transact(provider.functions.setACLManager(acl.address))
    d.transact(acl.functions.addPoolAdmin(admin))
    d.transact(acl.functions.addEmergencyAdmin(admin))
    d.transact(acl.functions.addRiskAdmin(admin))

    pool_impl = d.deploy(aave_artifact("Pool"), provider.address, libraries=_deploy_libraries(d))
    d.transact(pool_impl.functions.initialize(provider.address))
    d.transact(provider.functions.setPoolImpl(pool_impl.address))
    pool = d.at(aave_artifact("Pool"), provider.functions.getPool().call())

    configurator_logic = d.deploy(aave_artifact("ConfiguratorLogic")).address
    configurator_impl = d.deploy(
        aave_artifact("PoolConfigurator"), libraries={"ConfiguratorLogic": configurator_logic}
    )
    d.transact(configurator_impl.functions.initialize(provider.address))
    d.transact(provider.functions.setPoolConfiguratorImpl(configurator_impl.address))
    configurator = d.at(
        aave_artifact("PoolConfigurator"), provider.functions.getPoolConfigurator().call()
    )

    data_provider = d.deploy(aave_artifact("AaveProtocolDataProvider"), provider.address)
    d.transact(provider.functions.setPoolDataProvider(data_provider.address))

    weth = d.deploy(aave_artifact("MintableERC20"), "Wrapped Ether", "WETH", 18)
    feeds = [
        d.deploy(aave_artifact("MockAggregator"), price).address
        for price in (USDC_PRICE, WETH_PRICE)
    ]
    oracle = d.deploy(
        aave_artifact("AaveOracle"),
        provider.address,
        [usdc, weth.address],
        feeds,
        "0x" + "00" * 20,  # no fallback oracle
        "0x" + "00" * 20,  # base currency: USD
        PRICE_UNIT,
    )
    d.transact(provider.functions.setPriceOracle(oracle.address))

    implementations = (
        d.deploy(aave_artifact("AToken"), pool.address).address,
        d.deploy(aave_artifact("StableDebtToken"), pool.address).address,
        d.deploy(aave_artifact("VariableDebtToken"), pool.address).address,
    )
    usdc_strategy = _rate_strategy(d, provider.address, USDC_RATES)
    weth_strategy = _rate_strategy(d, provider.address, WETH_RATES)
    reserves = [
        _reserve_input(implementations, usdc, "USDC", 6, usdc_strategy.address, admin),
        _reserve_input(implementations, weth.address, "WETH", 18, weth_strategy.address, admin),
    ]
    d.transact(configurator.functions.initReserves(reserves))
    d.transact(configurator.functions.setReserveBorrowing(usdc, True))
    d.transact(configurator.functions.configureReserveAsCollateral(usdc, *USDC_COLLATERAL_BPS))
    d.transact(configurator.functions.setReserveFactor(usdc, USDC_RESERVE_FACTOR_BPS))
    d.transact(
        configurator.functions.configureReserveAsCollateral(weth.address, *WETH_COLLATERAL_BPS)
    )
    d.transact(configurator.functions.setReserveFactor(weth.address, WETH_RESERVE_FACTOR_BPS))

    a_token, stable_debt, variable_debt = data_provider.functions.getReserveTokensAddresses(
        usdc
    ).call()
    return ProtocolDeployment(
        name="aave",
        kind="aave_v3",
        address=pool.address,
        contracts={
            "a_token": a_token,
            "variable_debt_token": variable_debt,
            "stable_debt_token": stable_debt,
            "data_provider": data_provider.address,
            "rate_strategy": usdc_strategy.address,
            "addresses_provider": provider.address,
            "oracle": oracle.address,
            "pool_configurator": configurator.address,
            "acl_manager": acl.address,
            "collateral": weth.address,
        },
    )


def _target_debt(cash: int, debt: int, utilization: float) -> int:
    """The debt at which ``debt / (cash + debt)`` is ``utilization`` (cash + debt fixed)."""
    if not 0 <= utilization < 1:
        raise ValueError(f"utilization must be in [0, 1), not {utilization}")
    share = Fraction(utilization).limit_denominator(10**9)
    return (cash + debt) * share.numerator // share.denominator


def borrow_to_utilization_aave(
    d: Deployer,
    deployment: ProtocolDeployment,
    usdc: str,
    utilization: float,
    *,
    supply: int = DEFAULT_SUPPLY,
) -> None:
    """Brings Aave's USDC utilization (debt / (liquidity + debt)) to about ``utilization``.

    The devnet's supplier (actor ``aave-supplier``) first tops the reserve up to ``supply``
    base units of deposits; the borrower (actor ``aave-borrower``) then posts WETH as
    collateral and borrows USDC at a variable rate, or repays when the reserve is above
    the target.
    """
    pool = d.at(aave_artifact("Pool"), deployment.address)
    token = d.at(usdc_artifact(), usdc)
    a_token = d.at(aave_artifact("AToken"), deployment.contracts["a_token"])
    supplier = d.actor("aave-supplier")
    deposits = int(a_token.functions.totalSupply().call())
    if deposits < supply:
        _supply(d, pool, usdc, supplier, supply - deposits)

    cash = int(token.functions.balanceOf(a_token.address).call())
    debt_tokens = [
        d.at(aave_artifact("VariableDebtToken"), deployment.contracts["variable_debt_token"]),
        d.at(aave_artifact("StableDebtToken"), deployment.contracts["stable_debt_token"]),
    ]
    debt = sum(int(t.functions.totalSupply().call()) for t in debt_tokens)
    target = _target_debt(cash, debt, utilization)
    borrower = d.actor("aave-borrower")
    if target > debt:
        amount = target - debt
        _post_collateral(d, pool, deployment.contracts["collateral"], borrower, amount)
        d.transact(pool.functions.borrow(usdc, amount, VARIABLE, 0, borrower), borrower)
    elif target < debt:
        own = int(debt_tokens[0].functions.balanceOf(borrower).call())
        amount = min(debt - target, own)
        if amount > 0:
            ensure_balance(d, usdc, borrower, amount)
            d.transact(token.functions.approve(pool.address, amount), borrower)
            d.transact(pool.functions.repay(usdc, amount, VARIABLE, borrower), borrower)


def _supply(d: Deployer, pool: Contract, usdc: str, supplier: str, amount: int) -> None:
    token = d.at(usdc_artifact(), usdc)
    ensure_balance(d, usdc, supplier, amount)
    d.transact(token.functions.approve(pool.address, amount), supplier)
    d.transact(pool.functions.supply(usdc, amount, supplier, 0), supplier)


def _post_collateral(d: Deployer, pool: Contract, weth: str, borrower: str, borrow: int) -> None:
    """Supplies WETH worth twice ``borrow`` (USDC base units) for ``borrower``."""
    amount = 2 * borrow * USDC_PRICE * 10**18 // (WETH_PRICE * ONE_USDC) + 10**18
    collateral = d.at(aave_artifact("MintableERC20"), weth)
    d.transact(collateral.get_function_by_signature("mint(address,uint256)")(borrower, amount))
    d.transact(collateral.functions.approve(pool.address, amount), borrower)
    d.transact(pool.functions.supply(weth, amount, borrower, 0), borrower)
