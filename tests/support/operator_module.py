"""The operator module's attacker suite on the devnet: the funded account under attack and
the helpers its tests share (``tests/devnet/operator_module/``).

One account is deployed for a fresh EOA through Safe's factory, funded with 100,000 USDC and
100 COMP, with 10,000 USDC in each of the four pools. Then the operator key, signing its own
raw transactions as the service does, tries to take value out of it: every attempt must
revert on chain and leave the account's holdings (idle USDC and COMP, Aave's scaled balance,
Comet's principal, mTokens, vault shares, ether, allowances) exactly as they were.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eth_abi.abi import encode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from hypothesis import HealthCheck, settings

from support.devnet import Devnet
from support.safe_world import COMP, USDC, SafeWorld, Signer, a_token, contract, revert_reason
from yieldagent.devnet.anvil import rpc
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.safe import selector

MAX = 2**256 - 1
POSITION = 10_000 * USDC
FUNDED = 100_000 * USDC
REWARDS = 100 * COMP
THIEF = to_checksum_address("0x" + "7e" * 20)
OWNER_KEY = keccak(text="yieldagent.tests:safe-owner")
SECOND_OWNER_KEY = keccak(text="yieldagent.tests:second-safe-owner")
LOOSE = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def call(signature: str, *args: Any) -> bytes:
    """ABI calldata of ``signature`` (static and dynamic types, no tuples)."""
    inner = signature[signature.index("(") + 1 : -1]
    types = inner.split(",") if inner else []
    return selector(signature) + encode(types, list(args))


class Account:
    """The funded account under attack, its owner and the contracts around it."""

    def __init__(self, world: SafeWorld, owner: Signer, address: str) -> None:
        net = world.net
        self.world, self.owner = world, owner
        self.address: str = to_checksum_address(address)
        self.usdc = contract(net, "DevToken", net.usdc)
        assert net.manifest.reward_token is not None and net.router is not None
        self.comp = contract(net, "DevToken", net.manifest.reward_token)
        self.aave = net.manifest.protocol("aave").address
        self.a_token = a_token(net)
        self.comet = contract(net, "Comet", net.compound.address)
        self.rewards = net.compound.contracts["rewards"]
        self.mtoken = contract(net, "MToken", net.moonwell.address)
        self.vault = contract(net, "Vault", net.morpho.address)
        self.router = net.router
        self.targets = [self.aave, self.comet.address, self.mtoken.address, self.vault.address]
        self.spenders = [*self.targets, self.rewards, self.router]

    def holdings(self) -> dict[str, int]:
        """What the account holds, in units that time does not move (scaled or principal)."""
        a = self.address
        held = {
            "usdc": self.usdc.functions.balanceOf(a).call(),
            "comp": self.comp.functions.balanceOf(a).call(),
            "aave_scaled": self.a_token.functions.scaledBalanceOf(a).call(),
            "comet_principal": self.comet.functions.userBasic(a).call()[0],
            "mtokens": self.mtoken.functions.balanceOf(a).call(),
            "vault_shares": self.vault.functions.balanceOf(a).call(),
            "ether": self.world.w3.eth.get_balance(to_checksum_address(a)),
        }
        for token in (self.usdc, self.comp):
            for spender in self.spenders:
                held[f"allowance:{token.address}:{spender}"] = token.functions.allowance(
                    a, to_checksum_address(spender)
                ).call()
        return held

    def supply_calls(self, amount: int) -> list[tuple[str, bytes]]:
        """One supply of ``amount`` USDC to each pool."""
        a, usdc = self.address, self.usdc.address
        return [
            (self.aave, call("supply(address,uint256,address,uint16)", usdc, amount, a, 0)),
            (self.comet.address, call("supply(address,uint256)", usdc, amount)),
            (self.mtoken.address, call("mint(uint256)", amount)),
            (self.vault.address, call("deposit(uint256,address)", amount, a)),
        ]

    def refused(self, calls: Sequence[tuple[str, bytes]]) -> str:
        """Sends ``calls`` through the module from the operator; they must revert and leave
        the account as it was. Returns the revert reason."""
        before = self.holdings()
        world = self.world
        reason = world.operator.refused(world.execute(self.address, calls), world.module_abi)
        assert self.holdings() == before
        return reason


def fresh_owner(world: SafeWorld, key: bytes) -> Signer:
    owner = Signer(world.w3, key)
    world.net.d.fund(owner.address, 10**20)
    return owner


def warp(net: Devnet | SafeWorld, seconds: int) -> None:
    url = net.url if isinstance(net, Devnet) else net.net.url
    rpc(url, "evm_increaseTime", [seconds])
    rpc(url, "evm_mine")


def admin_refused(world: SafeWorld, fn: Any, sender: str | None = None) -> str:
    """The revert reason of an admin-side call ``fn`` from ``sender`` (default: the admin)."""
    d = world.net.d
    data = fn._encode_transaction_data()
    return revert_reason(world.w3, sender or d.admin, str(fn.address), data, world.module_abi)


def swap_call(acct: Account, token_in: str, token_out: str, amount: int, to: str) -> bytes:
    return call("swap(address,address,uint256,uint256,address)", token_in, token_out, amount, 0, to)


def account_value(acct: Account) -> int:
    """The account's USDC, idle and in the four pools (present values), in base units."""
    a = acct.address
    mtokens = acct.mtoken.functions.balanceOf(a).call()
    rate = acct.mtoken.functions.exchangeRateStored().call()
    shares = acct.vault.functions.balanceOf(a).call()
    return int(
        acct.usdc.functions.balanceOf(a).call()
        + acct.a_token.functions.balanceOf(a).call()
        + acct.comet.functions.balanceOf(a).call()
        + mtokens * rate // 10**18
        + acct.vault.functions.convertToAssets(shares).call()
    )


def refresh_feeds(world: SafeWorld) -> None:
    """Stamps both devnet feeds now (after the clock was moved)."""
    safe = world.net.manifest.safe
    assert safe is not None
    d: Deployer = world.net.d
    for token, feed in safe.price_feeds.items():
        answer = 10**8 if token == world.net.usdc else 50 * 10**8
        d.transact(contract(world.net, "DevPriceFeed", feed).functions.setAnswer(answer))


def dump_reward(acct: Account, amount: int, who: str = "pool-mover") -> int:
    """The thief sells ``amount`` of COMP of its own into the router's pool, making COMP
    cheaper there; returns the USDC it got."""
    d = acct.world.net.d
    thief = d.actor(who)
    d.transact(acct.comp.functions.mint(thief, amount))
    d.transact(acct.comp.functions.approve(acct.router, MAX), sender=thief)
    router = contract(acct.world.net, "SwapRouter", acct.router)
    before = acct.usdc.functions.balanceOf(thief).call()
    sell = router.functions.swap(acct.comp.address, acct.usdc.address, amount, 0, thief)
    d.transact(sell, sender=thief)
    return int(acct.usdc.functions.balanceOf(thief).call() - before)


def other_account(world: SafeWorld, usdc: int = 0, comp: int = 0) -> Account:
    """A second account, of another owner, holding ``usdc`` and ``comp`` idle."""
    owner = fresh_owner(world, SECOND_OWNER_KEY)
    address, _ = world.deploy_account(owner.address, "other")
    other = Account(world, owner, address)
    if usdc:
        world.net.d.transact(other.usdc.functions.mint(other.address, usdc))
    if comp:
        world.net.d.transact(other.comp.functions.mint(other.address, comp))
    return other


def propose(world: SafeWorld, change: tuple[Any, ...]) -> bytes:
    """The admin proposes ``change``; returns its id."""
    receipt = world.net.d.transact(world.module.functions.proposeChange(change))
    (event,) = world.module.events.ChangeProposed().process_receipt(receipt)
    return bytes(event["args"]["id"])


def opt_out(acct: Account, change_id: bytes) -> None:
    """The account's owner refuses the pending change ``change_id`` for its account."""
    world = acct.world
    data = world.module.functions.optOut(change_id)._encode_transaction_data()
    world.owner_safe_tx(acct.owner, acct.address, world.module.address, data)
