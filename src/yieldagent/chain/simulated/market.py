"""The simulated world: one clock and every simulated chain's pools, balances and txs.

Reads project the stored pools to the current simulated time in memory; writes
bring the pools they touch to that time and store them. ``settle`` (the worker does
it each tick) stores every pool at its last step boundary, so projections stay short
and the stored market does not depend on when the worker ran.

One module, longer than the house's usual: the world's clock, reads and every kind of
transaction share the one unit of work they are mined in; batched sends, the risk
scenarios and the pools' rules live in modules of their own (``sends``, ``risk``,
``pools``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from decimal import Decimal

from eth_utils.crypto import keccak

from yieldagent.chain.simulated.genesis import TIMING, genesis_pools, reward_token
from yieldagent.chain.simulated.pools import (
    STEP_SECONDS,
    advance,
    catch_up,
    deposit,
    rewards_owed,
    value_of,
    withdraw,
)
from yieldagent.chain.simulated.sends import SendBatch, checkpoint_rewards
from yieldagent.domain.catalog import Catalog
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.ports.chain import ChainKind, Send
from yieldagent.simulated_world.clock import SimClock
from yieldagent.simulated_world.state import MarketError, MinedTx, PoolState
from yieldagent.simulated_world.store import WorldStore, WorldUnit


def _tx_hash(seed: int, sequence: int) -> str:
    return "0x" + keccak(text=f"yieldagent-sim:{seed}:{sequence}").hex()


LOSS = "loss"
"""The kind of a history row that records a holder's share of a pool's bad debt."""
SWAP_FEE = Decimal("0.003")
FAUCET = "0x" + "fa" * 20
"""Where simulated tokens come from: mints are transfers from this address."""


class SimulatedMarket:
    """The simulated world, kept by ``store`` (the service's database: the composition
    root passes ``storage.simulation.SimulationStore``)."""

    def __init__(
        self,
        store: WorldStore,
        catalog: Catalog,
        seed: int,
        speed: float,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self._seed = seed
        self._speed = speed
        self._wall = wall
        self._projections: dict[tuple[int, str | None, int, int], list[PoolState]] = {}
        self._prices: dict[tuple[int, int], dict[str, tuple[int, int]]] = {}
        """Each chain's price feeds by (chain, the world's transaction sequence)."""

    @property
    def seed(self) -> int:
        """The world's seed (borrow demand's random walks)."""
        return self._seed

    # -- the world and its clock ------------------------------------------------

    def start(self, set_speed: bool = True) -> None:
        """Creates the world at genesis if needed and, with ``set_speed``, applies the
        configured speed (the service does; one-off commands leave it as it is)."""
        with self.store.reading() as unit:
            exists = unit.clock() is not None
        if not exists:
            wall = self._wall()
            genesis = int(wall) // STEP_SECONDS * STEP_SECONDS
            clock = SimClock(genesis, wall, self._speed)
            pools = genesis_pools(self.catalog, self._seed, genesis)
            self.store.create_world(self._seed, genesis, clock, pools)
        with self.store.writing() as unit:
            world = unit.clock()
            assert world is not None
            self._seed = world.seed
            if set_speed and world.clock.speed != self._speed:
                unit.set_clock(world.clock.with_speed(self._speed, self._wall()))

    def now(self) -> int:
        """Simulated unix time now."""
        with self.store.reading() as unit:
            return self._now(unit)

    def _now(self, unit: WorldUnit) -> int:
        world = unit.clock()
        if world is None:
            raise RuntimeError("the simulated world does not exist: call start() first")
        return world.clock.now(self._wall())

    def advance(self, seconds: int) -> int:
        """Moves simulated time ``seconds`` ahead, accruing everything; returns the new time."""
        if seconds < 0:
            raise InvalidRequest("seconds must not be negative")
        with self.store.writing() as unit:
            world = unit.clock()
            assert world is not None
            clock = world.clock.advanced(seconds, self._wall())
            unit.set_clock(clock)
            now = clock.now(self._wall())
            self._settle(unit, now)
        return now

    def settle(self) -> int:
        """Stores every pool at the current simulated time; returns that time."""
        with self.store.writing() as unit:
            now = self._now(unit)
            self._settle(unit, now)
        return now

    def _settle(self, unit: WorldUnit, now: int) -> None:
        for pool in unit.pools():
            catch_up(pool, now, self._seed)
            unit.save_pool(pool)

    def block_number(self, chain_id: int, moment: int, genesis: int) -> int:
        """The block that ``chain_id`` is at, at simulated time ``moment``."""
        timing = TIMING[chain_id]
        return timing.genesis_block + int((moment - genesis) / timing.block_seconds)

    def head(self, chain_id: int) -> tuple[int, int]:
        """(block number, timestamp) of ``chain_id`` now."""
        with self.store.reading() as unit:
            world = unit.clock()
            assert world is not None
            now = world.clock.now(self._wall())
            return self.block_number(chain_id, now, world.genesis), now

    # -- reads ------------------------------------------------------------------

    def pools_now(self, chain_id: int, token: str | None = None) -> list[PoolState]:
        """The pools of a chain (and token), projected to the current simulated time.

        A projection depends only on the time and on the transactions mined so far (every
        change to a pool is one), so it is cached under both: exact, never stale. Callers
        must not modify the returned pools.
        """
        with self.store.reading() as unit:
            return self._projected(unit, chain_id, token)[0]

    def guard_inputs(
        self, chain_id: int, token: str
    ) -> tuple[list[PoolState], dict[str, tuple[int, int]], int]:
        """What the guards read of a chain's ``token`` pools, in one read: the pools as
        ``pools_now`` has them, the chain's price feeds (by symbol: price, peg) and the
        simulated time they were projected to. A feed is set by a transaction, so the
        feeds are cached with the projection."""
        with self.store.reading() as unit:
            pools, key = self._projected(unit, chain_id, token)
            prices = self._prices.get((chain_id, key[3]))
            if prices is None:
                prices = unit.prices(chain_id)
                if len(self._prices) >= 256:
                    self._prices.clear()
                self._prices[(chain_id, key[3])] = prices
        return pools, prices, key[2]

    def _projected(
        self, unit: WorldUnit, chain_id: int, token: str | None
    ) -> tuple[list[PoolState], tuple[int, str | None, int, int]]:
        """``pools_now`` within ``unit``, and the key it is cached under."""
        world = unit.clock()
        if world is None:
            raise RuntimeError("the simulated world does not exist: call start() first")
        key = (chain_id, token, world.clock.now(self._wall()), world.sequence)
        cached = self._projections.get(key)
        if cached is not None:
            return cached, key
        pools = unit.pools(chain_id, token)
        for pool in pools:
            advance(pool, key[2], self._seed)
        if len(self._projections) >= 256:
            self._projections.clear()
        self._projections[key] = pools
        return pools, key

    def balance(self, chain_id: int, token: str, holder: str) -> int:
        """``holder``'s balance of ``token`` on ``chain_id``."""
        with self.store.reading() as unit:
            return unit.balance(chain_id, token, holder)

    def positions(self, chain_id: int, token: str, holder: str) -> list[tuple[str, int]]:
        """(protocol, value) of each non-zero position of ``holder`` in ``token`` pools."""
        with self.store.reading() as unit:
            held = unit.scaled_positions(chain_id, token, holder)
        if not held:
            return []
        return [
            (pool.protocol, value_of(pool, held[pool.protocol]))
            for pool in self.pools_now(chain_id, token)
            if held.get(pool.protocol)
        ]

    def holdings(
        self, chain_id: int, token: str, holders: Sequence[str]
    ) -> dict[str, tuple[int, list[tuple[str, int]]]]:
        """Each of ``holders``' balance of ``token`` and (protocol, value) of its non-zero
        positions in ``token`` pools, as ``balance`` and ``positions`` read them one by
        one; two queries for all of them."""
        with self.store.reading() as unit:
            balances = unit.balances(chain_id, token, holders)
            held = unit.scaled_positions_of(chain_id, token, holders)
        pools = self.pools_now(chain_id, token) if held else []
        return {
            holder: (
                balances.get(holder, 0),
                [
                    (pool.protocol, value_of(pool, held[holder][pool.protocol]))
                    for pool in pools
                    if held.get(holder, {}).get(pool.protocol)
                ],
            )
            for holder in holders
        }

    def accrued_rewards(self, chain_id: int, holder: str) -> dict[str, int]:
        """Reward units ``holder`` could claim now, by reward token address."""
        with self.store.reading() as unit:
            now = self._now(unit)
            owed: dict[str, int] = {}
            for pool in unit.pools(chain_id):
                position = unit.position(pool, holder)
                if pool.reward_token is None or not (position.scaled or position.rewards_owed):
                    continue
                advance(pool, now, self._seed)
                amount = position.rewards_owed + rewards_owed(
                    pool, position.scaled, position.reward_snapshot
                )
                owed[pool.reward_token] = owed.get(pool.reward_token, 0) + amount
            return {token: amount for token, amount in owed.items() if amount > 0}

    def history(self, chain_id: int, holder: str, since_block: int) -> list[MinedTx]:
        """Transactions involving ``holder`` on ``chain_id`` from ``since_block`` on."""
        with self.store.reading() as unit:
            return unit.transactions_of(chain_id, holder, since_block)

    def histories(
        self, chain_id: int, holders: Sequence[str], since_block: int
    ) -> dict[str, list[MinedTx]]:
        """``history`` of each of ``holders`` (each one a key), read at once."""
        with self.store.reading() as unit:
            return unit.transactions_of_many(chain_id, holders, since_block)

    def transaction(self, tx_hash: str) -> MinedTx | None:
        """A mined simulated transaction."""
        with self.store.reading() as unit:
            return unit.transaction(tx_hash)

    # -- writes -----------------------------------------------------------------

    def _mine(
        self,
        unit: WorldUnit,
        chain_id: int,
        kind: str,
        token: str,
        sender: str,
        recipient: str,
        amount: int,
        token_out: str | None = None,
        amount_out: int | None = None,
    ) -> MinedTx:
        """Records a transaction mined now, with the next hash of the simulated world."""
        world = unit.clock()
        assert world is not None
        now = world.clock.now(self._wall())
        sequence = unit.next_sequence()
        mined = MinedTx(
            tx_hash=_tx_hash(world.seed, sequence),
            chain_id=chain_id,
            block_number=self.block_number(chain_id, now, world.genesis),
            timestamp=now,
            sequence=sequence,
            kind=kind,
            token=token,
            sender=sender,
            recipient=recipient,
            amount=amount,
            token_out=token_out,
            amount_out=amount_out,
        )
        unit.record(mined)
        return mined

    def note_loss(
        self, unit: WorldUnit, chain_id: int, token: str, protocol: str, holder: str, amount: int
    ) -> MinedTx:
        """Records what a holder lost when ``protocol``'s pool wrote off bad debt: a
        ``loss`` row of the holder's history (no token moves; the chain port leaves it
        out, the books' check reads it)."""
        return self._mine(unit, chain_id, LOSS, token, protocol, holder, amount)

    def deposit_from(
        self, chain_id: int, token: str, sender: str, recipient: str, amount: int
    ) -> MinedTx:
        """A user's deposit: the faucet gives ``sender`` the tokens, and ``sender`` transfers
        them to ``recipient``; both in one unit. Returns the transfer."""
        if amount <= 0:
            raise MarketError("amount must be positive")
        with self.store.writing() as unit:
            unit.credit(chain_id, token, sender, amount)
            self._mine(
                unit,
                chain_id,
                kind=ChainKind.MINT,
                token=token,
                sender=FAUCET,
                recipient=sender,
                amount=amount,
            )
            return self._transfer(unit, chain_id, token, sender, recipient, amount)

    def _transfer(
        self,
        unit: WorldUnit,
        chain_id: int,
        token: str,
        sender: str,
        recipient: str,
        amount: int,
    ) -> MinedTx:
        unit.credit(chain_id, token, sender, -amount)
        unit.credit(chain_id, token, recipient, amount)
        return self._mine(
            unit,
            chain_id,
            kind=ChainKind.TRANSFER,
            token=token,
            sender=sender,
            recipient=recipient,
            amount=amount,
        )

    def transfer(
        self, chain_id: int, token: str, sender: str, recipient: str, amount: int
    ) -> MinedTx:
        """An ERC-20 transfer."""
        if amount <= 0:
            raise MarketError("amount must be positive")
        with self.store.writing() as unit:
            return self._transfer(unit, chain_id, token, sender, recipient, amount)

    def _pool(self, unit: WorldUnit, chain_id: int, protocol: str, token: str) -> PoolState:
        for pool in unit.pools(chain_id, token):
            if pool.protocol == protocol:
                advance(pool, self._now(unit), self._seed)
                return pool
        raise MarketError(f"no {protocol} pool for {token} on chain {chain_id}")

    def supply(self, chain_id: int, holder: str, protocol: str, token: str, amount: int) -> MinedTx:
        """Supplies ``amount`` of ``holder``'s ``token`` to ``protocol``."""
        with self.store.writing() as unit:
            pool = self._pool(unit, chain_id, protocol, token)
            unit.credit(chain_id, token, holder, -amount)
            position = unit.position(pool, holder)
            checkpoint_rewards(pool, position)
            position.scaled += deposit(pool, amount)
            unit.save_position(position)
            unit.save_pool(pool)
            return self._mine(
                unit,
                chain_id,
                kind=ChainKind.SUPPLY,
                token=token,
                sender=holder,
                recipient=protocol,
                amount=amount,
            )

    def withdraw(
        self, chain_id: int, holder: str, protocol: str, token: str, amount: int
    ) -> MinedTx:
        """Withdraws ``amount`` of ``token`` from ``holder``'s position in ``protocol``."""
        with self.store.writing() as unit:
            pool = self._pool(unit, chain_id, protocol, token)
            position = unit.position(pool, holder)
            checkpoint_rewards(pool, position)
            position.scaled -= withdraw(pool, amount, position.scaled)
            unit.credit(chain_id, token, holder, amount)
            unit.save_position(position)
            unit.save_pool(pool)
            return self._mine(
                unit,
                chain_id,
                kind=ChainKind.WITHDRAW,
                token=token,
                sender=protocol,
                recipient=holder,
                amount=amount,
            )

    def send_many(self, chain_id: int, sends: Sequence[Send]) -> list[MinedTx | MarketError]:
        """Each send (a supply, or a withdrawal: of the position's whole value with
        ``whole``) as its own transaction, exactly as ``supply`` and ``withdraw`` would mine
        them one after another at this moment, in one unit. A refused send is the
        MarketError the single call raises, changes nothing, and the later sends still go."""
        for send in sends:
            if send.action not in (ChainKind.SUPPLY, ChainKind.WITHDRAW):
                raise ValueError(f"unknown action {send.action!r}: supply or withdraw")
        if not sends:
            return []
        done: list[MinedTx | MarketError] = []
        with self.store.writing() as unit:
            world = unit.clock()
            if world is None:
                raise RuntimeError("the simulated world does not exist: call start() first")
            now = world.clock.now(self._wall())
            block = self.block_number(chain_id, now, world.genesis)
            batch = SendBatch(unit, chain_id, sends, now, self._seed)
            mined_now: list[MinedTx] = []
            for send in sends:
                try:
                    if send.action == ChainKind.SUPPLY:
                        batch.supply(send.holder, send.protocol, send.token, send.amount)
                        amount = send.amount
                        sender, recipient = send.holder, send.protocol
                    else:
                        amount = batch.withdraw(
                            send.holder, send.protocol, send.token, send.amount, send.whole
                        )
                        sender, recipient = send.protocol, send.holder
                except MarketError as refused:
                    done.append(refused)
                    continue
                sequence = world.sequence + len(mined_now) + 1
                mined = MinedTx(
                    _tx_hash(world.seed, sequence),
                    chain_id,
                    block,
                    now,
                    sequence,
                    send.action,
                    send.token,
                    sender,
                    recipient,
                    amount,
                )
                mined_now.append(mined)
                done.append(mined)
            batch.save()
            unit.take_sequences(len(mined_now))
            unit.record_many(mined_now)
        return done

    def price(self, chain_id: int, token: str) -> tuple[Decimal, int]:
        """(price in US dollars, decimals) of a catalog or reward token."""
        for candidate in self.catalog.chain(chain_id).tokens:
            if candidate.address == token:
                return Decimal(str(candidate.price_usd)), candidate.decimals
        reward = reward_token(chain_id, token)
        if reward is None:
            raise MarketError(f"unknown token {token} on chain {chain_id}")
        return Decimal(str(reward.price_usd)), reward.decimals

    def quote_swap(self, chain_id: int, token_in: str, token_out: str, amount_in: int) -> int:
        """What swapping ``amount_in`` gives, at the tokens' prices less the swap fee."""
        price_in, decimals_in = self.price(chain_id, token_in)
        price_out, decimals_out = self.price(chain_id, token_out)
        value = Decimal(amount_in) * price_in / 10**decimals_in * (1 - SWAP_FEE)
        return int(value / price_out * 10**decimals_out)

    def swap(
        self,
        chain_id: int,
        holder: str,
        token_in: str,
        token_out: str,
        amount_in: int,
        min_out: int,
    ) -> MinedTx:
        """Swaps through a simulated DEX with unlimited liquidity at the tokens' prices."""
        if amount_in <= 0:
            raise MarketError("amount must be positive")
        amount_out = self.quote_swap(chain_id, token_in, token_out, amount_in)
        if amount_out < min_out:
            raise MarketError(f"swap gives {amount_out}, less than the minimum {min_out}")
        with self.store.writing() as unit:
            unit.credit(chain_id, token_in, holder, -amount_in)
            unit.credit(chain_id, token_out, holder, amount_out)
            return self._mine(
                unit,
                chain_id,
                kind=ChainKind.SWAP,
                token=token_in,
                sender=holder,
                recipient=holder,
                amount=amount_in,
                token_out=token_out,
                amount_out=amount_out,
            )

    def claim_rewards(self, chain_id: int, holder: str) -> list[MinedTx]:
        """Claims every reward token ``holder`` has accrued; one transaction per token."""
        claimed: dict[str, int] = {}
        with self.store.writing() as unit:
            now = self._now(unit)
            for pool in unit.pools(chain_id):
                position = unit.position(pool, holder)
                if pool.reward_token is None or not (position.scaled or position.rewards_owed):
                    continue
                advance(pool, now, self._seed)
                checkpoint_rewards(pool, position)
                if position.rewards_owed:
                    token = pool.reward_token
                    claimed[token] = claimed.get(token, 0) + position.rewards_owed
                    position.rewards_owed = 0
                unit.save_position(position)
                unit.save_pool(pool)
            receipts = []
            for token, amount in claimed.items():
                unit.credit(chain_id, token, holder, amount)
                receipts.append(
                    self._mine(
                        unit,
                        chain_id,
                        kind=ChainKind.CLAIM,
                        token=token,
                        sender=FAUCET,
                        recipient=holder,
                        amount=amount,
                    )
                )
            return receipts
