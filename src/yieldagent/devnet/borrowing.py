"""Borrowers that give the devnet's pools a realistic utilization, so that rates are not zero.

``borrow_to_utilization`` first makes sure a pool has ``min_supply`` of USDC supplied (a
supplier account mints and supplies the shortfall), then a borrower posts collateral worth
twice its debt and borrows until borrows / supply reaches the target. For Morpho it does this in
each market of the vault (the supplier supplies to the market directly, not through the vault).
Aave's counterpart lives in ``aave.py`` (devnet-core).
"""

from __future__ import annotations

from fractions import Fraction

from web3 import Web3
from web3.contract import Contract

from yieldagent.composition.deployments import ProtocolDeployment
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.tokens import mint_and_approve
from yieldagent.devnet.toolchain import compile_project

MIN_SUPPLY = 5_000_000 * 10**6  # USDC supplied to each pool (each Morpho market) at least
COLLATERAL_USD = 3000  # Comet's and Moonwell's collateral: 3,000 USDC per 1e18 units
USDC_SCALE = 10**6


def _collateral_for(debt: int) -> int:
    """Collateral units (18 decimals) worth twice ``debt`` (USDC units)."""
    return 2 * debt * 10**18 // (COLLATERAL_USD * USDC_SCALE) + 1


def _shortfall(supply: int, borrows: int, utilization: Fraction) -> int:
    return max(0, int(utilization * supply) - borrows)


def borrow_to_utilization(
    d: Deployer,
    deployment: ProtocolDeployment,
    usdc: str,
    utilization: float,
    *,
    supplier: str | None = None,
    borrower: str | None = None,
    min_supply: int = MIN_SUPPLY,
) -> None:
    """Brings ``deployment`` (compound, moonwell or the Morpho vault's markets) to
    ``utilization`` (0 to 1; a pool already above it is left alone). Supplier and borrower
    default to anvil accounts 1 and 2."""
    target = Fraction(str(utilization))
    if not 0 <= target < 1:
        raise ValueError(f"utilization must lie in [0, 1): {utilization}")
    supplier = Web3.to_checksum_address(supplier or d.accounts[1])
    borrower = Web3.to_checksum_address(borrower or d.accounts[2])
    usdc = Web3.to_checksum_address(usdc)
    if deployment.kind == "compound_v3":
        _comet(d, deployment, usdc, target, supplier, borrower, min_supply)
    elif deployment.kind == "moonwell":
        _mtoken(d, deployment, usdc, target, supplier, borrower, min_supply)
    elif deployment.kind == "morpho_blue":
        _morpho(d, deployment, usdc, target, supplier, borrower, min_supply)
    else:
        raise ValueError(f"no devnet borrower for {deployment.kind!r}")


def _comet(
    d: Deployer,
    deployment: ProtocolDeployment,
    usdc: str,
    target: Fraction,
    supplier: str,
    borrower: str,
    min_supply: int,
) -> None:
    comet = d.at(compile_project()["Comet"], deployment.address)
    supplied = comet.functions.totalSupply().call()
    if supplied < min_supply:
        mint_and_approve(d, usdc, supplier, comet.address, min_supply - supplied)
        d.transact(comet.functions.supply(usdc, min_supply - supplied), sender=supplier)
    supplied = comet.functions.totalSupply().call()
    debt = _shortfall(supplied, comet.functions.totalBorrow().call(), target)
    if debt == 0:
        return
    collateral = deployment.contracts["collateral"]
    amount = _collateral_for(debt)
    mint_and_approve(d, collateral, borrower, comet.address, amount)
    d.transact(comet.functions.supply(collateral, amount), sender=borrower)
    d.transact(comet.functions.withdraw(usdc, debt), sender=borrower)


def _mtoken(
    d: Deployer,
    deployment: ProtocolDeployment,
    usdc: str,
    target: Fraction,
    supplier: str,
    borrower: str,
    min_supply: int,
) -> None:
    mtoken = d.at(compile_project()["MToken"], deployment.address)

    def supply_and_borrows() -> tuple[int, int]:
        cash = mtoken.functions.getCash().call()
        borrows = mtoken.functions.totalBorrows().call()
        return cash + borrows - mtoken.functions.totalReserves().call(), borrows

    supplied, _ = supply_and_borrows()
    if supplied < min_supply:
        mint_and_approve(d, usdc, supplier, mtoken.address, min_supply - supplied)
        d.transact(mtoken.functions.mint(min_supply - supplied), sender=supplier)
    debt = _shortfall(*supply_and_borrows(), target)
    if debt == 0:
        return
    amount = _collateral_for(debt)
    mint_and_approve(d, deployment.contracts["collateral"], borrower, mtoken.address, amount)
    d.transact(mtoken.functions.depositCollateral(amount), sender=borrower)
    d.transact(mtoken.functions.borrow(debt), sender=borrower)


def _morpho(
    d: Deployer,
    deployment: ProtocolDeployment,
    usdc: str,
    target: Fraction,
    supplier: str,
    borrower: str,
    min_supply: int,
) -> None:
    artifacts = compile_project()
    morpho = d.at(artifacts["Morpho"], deployment.contracts["morpho"])
    volatile = deployment.contracts["collateral"]
    for market in deployment.markets:
        market_id = bytes.fromhex(market[2:])
        params = morpho.functions.idToMarketParams(market_id).call()
        d.transact(morpho.functions.accrueInterest(params))
        supplied = _market(morpho, market_id)[0]
        if supplied < min_supply:
            mint_and_approve(d, usdc, supplier, morpho.address, min_supply - supplied)
            d.transact(
                morpho.functions.supply(params, min_supply - supplied, 0, supplier, b""),
                sender=supplier,
            )
        debt = _shortfall(*_market(morpho, market_id), target)
        if debt == 0:
            continue
        # collateral worth twice the debt at the market's own oracle (loan units per
        # collateral unit, scaled 1e36)
        price = d.at(artifacts["OracleMock"], params[2]).functions.price().call()
        amount = 2 * debt * 10**36 // price + 1
        collateral_token = params[1]
        if collateral_token == volatile:
            collateral = d.at(artifacts["ERC20Mock"], collateral_token)
            held = collateral.functions.balanceOf(borrower).call()
            d.transact(collateral.functions.setBalance(borrower, held + amount))
            d.transact(collateral.functions.approve(morpho.address, amount), sender=borrower)
        else:  # a DevToken: minted
            mint_and_approve(d, collateral_token, borrower, morpho.address, amount)
        d.transact(
            morpho.functions.supplyCollateral(params, amount, borrower, b""), sender=borrower
        )
        d.transact(morpho.functions.borrow(params, debt, 0, borrower, borrower), sender=borrower)


def _market(morpho: Contract, market_id: bytes) -> tuple[int, int]:
    """(totalSupplyAssets, totalBorrowAssets) of a Morpho market at its last update."""
    state = morpho.functions.market(market_id).call()
    return int(state[0]), int(state[2])
