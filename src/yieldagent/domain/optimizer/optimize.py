"""The stateless optimizer as a use case: where a partner's capital would earn the most on
the live market, what moving it costs, and the contract calls a wallet would make to get
there. It reads the chain and acts on nothing.

The question comes as the partner wrote it and is checked in order: the amounts, the
token (an unknown chain is NotFound; a token the chain does not list is a bad request),
the protocols, the constraints, that the current positions fit in the capital, and last
the wallet the calls are planned for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from yieldagent.domain.addresses import parse_address
from yieldagent.domain.amounts import parse_amount
from yieldagent.domain.catalog import Catalog
from yieldagent.domain.constraints import RawConstraint, Thresholds, parse_constraints
from yieldagent.domain.errors import InvalidInput, InvalidRequest, NotFound
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.optimizer.rebalance import Costs, Plan, optimize
from yieldagent.domain.ports.chain import ChainKind, ContractCall


@dataclass(frozen=True, slots=True)
class Target:
    """Where the optimizer would have some of the capital: a protocol, the amount there,
    and the pool's APR once it holds that amount (our own rate impact included)."""

    protocol: str
    amount: int
    apr: float


@dataclass(frozen=True, slots=True)
class Optimization:
    """The optimizer's answer: the targets by protocol, the plan that reaches them from
    the current positions, and each contract call a wallet would make, with the protocol
    it is for (none without a wallet)."""

    targets: tuple[Target, ...]
    plan: Plan
    calls: tuple[tuple[str, ContractCall], ...] = ()


class Optimizer:
    """Answers what the best allocation of some capital would be on one chain, now."""

    def __init__(
        self, catalog: Catalog, chains: Mapping[int, MarketChain], thresholds: Thresholds
    ) -> None:
        self._catalog = catalog
        self._chains = chains
        self._thresholds = thresholds

    async def optimize(
        self,
        chain_id: int,
        token_address: str,
        total_capital: str,
        current_positions: Mapping[str, str],
        protocols: Sequence[str],
        constraints: Sequence[RawConstraint],
        wallet: str | None = None,
    ) -> Optimization:
        """The best allocation of ``total_capital`` of the token at ``token_address``
        among ``protocols`` (every protocol of the token when none), given what is held
        in each protocol now and the partner's constraints; with ``wallet``, the calls it
        would make. Amounts are decimal strings, as partners write them."""
        total = parse_amount(total_capital, ("total_capital",), minimum=0)
        current = {
            name: parse_amount(amount, ("current_allocations", name), minimum=0)
            for name, amount in current_positions.items()
        }
        address = parse_address(token_address, ("token_address",))
        self._catalog.chain(chain_id)  # an unknown chain is NotFound
        try:
            token = self._catalog.token(chain_id, address)
        except NotFound as missing:  # a token the chain does not list is the caller's error
            raise InvalidRequest(missing.detail) from None
        names = list(dict.fromkeys(protocols)) or [p.name for p in token.protocols]
        self._catalog.check_protocols(token, [*names, *current])
        rules = parse_constraints(constraints)
        idle = total - sum(current.values())
        if idle < 0:
            raise InvalidInput.field(
                ("total_capital",), "Input should be at least the sum of current_allocations"
            )
        chain = self._chains[chain_id]
        quotes = {q.protocol: q for q in await chain.quotes(address, [*names, *current])}
        candidates = [Candidate(p, quotes[p], current.get(p, 0)) for p in names]
        gas = await chain.gas_cost(ChainKind.SUPPLY)
        costs = Costs(gas.usd, token.price_usd, token.decimals)
        plan = optimize(current, idle, candidates, rules, costs, self._thresholds)
        targets = tuple(
            Target(name, amount, quotes[name].apr(amount - current.get(name, 0)))
            for name, amount in sorted(plan.target.items())
        )
        calls: list[tuple[str, ContractCall]] = []
        if wallet is not None:
            holder = parse_address(wallet, ("wallet_address",))
            for move in plan.moves:
                planned = await chain.plan_calls(
                    holder, move.action, move.protocol, address, move.amount
                )
                calls += [(move.protocol, call) for call in planned]
        return Optimization(targets, plan, tuple(calls))
