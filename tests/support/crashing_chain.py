"""A chain port that dies, fails or lets something else happen at a chosen call.

``CrashingChain`` wraps another chain port (the simulated chain, in the tests) and passes
every call through, except at the calls it was told about:

- ``crash(method, nth, phase)``: the process dies before or after the ``nth`` call of
  ``method``. ``after`` means the call went through (a transfer is mined, a supply is in
  the pool) and the process died before it could record anything. The death is
  ``SimulatedCrash``, a ``BaseException``: no ``except Exception`` of the service catches
  it, as nothing catches a SIGKILL. From then on every call on this chain raises it too
  (the process is gone), so no cleanup that needs the chain can run. What a real death
  would not do still happens: ``finally`` blocks that only touch the database run (a
  wallet's lease is released on the way out). The tests let every lease expire anyway
  (``support.agent_world.expire_leases``) and reconcile in a new process: a new
  ``Lifecycle`` on a chain that does not crash.
- ``fail(method, nth, phase)``: the ``nth`` call raises ``ChainFailure``, an ordinary
  exception, as a reverted or unanswered transaction does. ``before``: nothing reached
  the chain. ``after``: the transaction was mined but its answer was lost.
- ``hook(method, nth, action)``: awaits ``action`` before the ``nth`` call, to interleave
  another use case at that moment.

Calls are counted per method name. ``only`` narrows what counts to the calls whose
arguments match (e.g. only transfers to the user's EOA), so a trigger does not depend on
the order in which an implementation makes its other calls of the same method.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.domain.ports.chain import (
    Block,
    ChainTx,
    ClaimReceipt,
    ContractCall,
    GasCost,
    Position,
    RewardAmount,
    SwapReceipt,
    Transfer,
    TxReceipt,
)

T = TypeVar("T")
When = Literal["before", "after"]
Arguments = Mapping[str, Any]
"""A call's arguments by parameter name, e.g. {"token": ..., "recipient": ...}."""


class SimulatedCrash(BaseException):
    """The process died here. A BaseException, so that ``except Exception`` does not
    catch it."""


class ChainFailure(Exception):
    """A chain call that failed: reverted, or its answer lost."""


@dataclass(slots=True)
class _Trigger:
    method: str
    nth: int
    phase: When
    kind: Literal["crash", "fail", "hook"]
    only: Callable[[Arguments], bool] | None = None
    action: Callable[[], Awaitable[None]] | None = None
    seen: int = 0
    fired: bool = False


@dataclass(slots=True)
class CallLog:
    """What went through the wrapper: every call by method, and the triggers that fired."""

    calls: Counter[str] = field(default_factory=Counter)
    fired: list[str] = field(default_factory=list)


class CrashingChain:
    """A chain port over ``inner`` that crashes, fails or runs a hook at chosen calls."""

    def __init__(self, inner: MarketChain) -> None:
        self._inner = inner
        self.chain_id = inner.chain_id
        self._triggers: list[_Trigger] = []
        self.log = CallLog()
        self.crashed = False
        """Whether the simulated process died (every call raises SimulatedCrash since)."""

    # -- arming ----------------------------------------------------------------------------

    def crash(
        self,
        method: str,
        nth: int = 1,
        phase: When = "after",
        only: Callable[[Arguments], bool] | None = None,
    ) -> CrashingChain:
        """Dies before or after the ``nth`` (matching) call of ``method``."""
        self._triggers.append(_Trigger(method, nth, phase, "crash", only))
        return self

    def fail(
        self,
        method: str,
        nth: int = 1,
        phase: When = "before",
        only: Callable[[Arguments], bool] | None = None,
    ) -> CrashingChain:
        """Raises ChainFailure before (nothing mined) or after (mined, answer lost) the
        ``nth`` (matching) call of ``method``."""
        self._triggers.append(_Trigger(method, nth, phase, "fail", only))
        return self

    def hook(
        self,
        method: str,
        action: Callable[[], Awaitable[None]],
        nth: int = 1,
        only: Callable[[Arguments], bool] | None = None,
    ) -> CrashingChain:
        """Awaits ``action`` just before the ``nth`` (matching) call of ``method``."""
        self._triggers.append(_Trigger(method, nth, "before", "hook", only, action))
        return self

    def unfired(self) -> list[str]:
        """The triggers that never fired: a test whose trigger was not reached proves
        nothing, so it should fail."""
        return [f"{t.kind} {t.phase} {t.method} #{t.nth}" for t in self._triggers if not t.fired]

    # -- the pass-through ------------------------------------------------------------------

    async def _fire(self, trigger: _Trigger) -> None:
        trigger.fired = True
        self.log.fired.append(f"{trigger.kind} {trigger.phase} {trigger.method} #{trigger.nth}")
        if trigger.kind == "crash":
            self.crashed = True
            raise SimulatedCrash(f"process killed {trigger.phase} {trigger.method} #{trigger.nth}")
        if trigger.kind == "fail":
            raise ChainFailure(f"chain refused {trigger.method} #{trigger.nth} ({trigger.phase})")
        assert trigger.action is not None
        await trigger.action()

    async def _call(
        self, method: str, call: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any
    ) -> T:
        if self.crashed:
            raise SimulatedCrash(f"the process is dead: {method} never ran")
        self.log.calls[method] += 1
        arguments: Arguments | None = None
        due: list[_Trigger] = []
        for trigger in self._triggers:
            if trigger.method != method or trigger.fired:
                continue
            if trigger.only is not None:
                if arguments is None:
                    arguments = inspect.signature(call).bind(*args, **kwargs).arguments
                if not trigger.only(arguments):
                    continue
            trigger.seen += 1
            if trigger.seen == trigger.nth:
                due.append(trigger)
        for trigger in due:
            if trigger.phase == "before":
                await self._fire(trigger)
        result = await call(*args, **kwargs)
        for trigger in due:
            if trigger.phase == "after":
                await self._fire(trigger)
        return result

    # -- the port --------------------------------------------------------------------------

    async def head(self) -> Block:
        return await self._call("head", self._inner.head)

    async def token_balance(self, token: str, holder: str) -> int:
        return await self._call("token_balance", self._inner.token_balance, token, holder)

    async def positions(self, holder: str, token: str) -> list[Position]:
        return await self._call("positions", self._inner.positions, holder, token)

    async def history(self, holder: str, since_block: int) -> list[ChainTx]:
        return await self._call("history", self._inner.history, holder, since_block)

    async def find_transfer(self, tx_hash: str) -> Transfer | None:
        return await self._call("find_transfer", self._inner.find_transfer, tx_hash)

    async def quotes(self, token: str, protocols: Sequence[str]) -> list[PoolQuote]:
        return await self._call("quotes", self._inner.quotes, token, protocols)

    async def plan_calls(
        self, holder: str, action: str, protocol: str, token: str, amount: int
    ) -> list[ContractCall]:
        return await self._inner.plan_calls(holder, action, protocol, token, amount)

    async def check_account(self, account: SmartAccount) -> None:
        await self._inner.check_account(account)

    async def prepare_account(self, account: SmartAccount) -> None:
        await self._call("prepare_account", self._inner.prepare_account, account)

    async def revocation(self, holder: str) -> str | None:
        return await self._inner.revocation(holder)

    async def supply(self, holder: str, protocol: str, token: str, amount: int) -> TxReceipt:
        return await self._call("supply", self._inner.supply, holder, protocol, token, amount)

    async def withdraw(
        self, holder: str, protocol: str, token: str, amount: int, whole: bool = False
    ) -> TxReceipt:
        return await self._call(
            "withdraw", self._inner.withdraw, holder, protocol, token, amount, whole
        )

    async def quote_swap(self, token_in: str, token_out: str, amount_in: int) -> int:
        return await self._call(
            "quote_swap", self._inner.quote_swap, token_in, token_out, amount_in
        )

    async def swap(
        self, holder: str, token_in: str, token_out: str, amount_in: int, min_out: int
    ) -> SwapReceipt:
        return await self._call(
            "swap", self._inner.swap, holder, token_in, token_out, amount_in, min_out
        )

    async def transfer(self, token: str, sender: str, recipient: str, amount: int) -> TxReceipt:
        return await self._call("transfer", self._inner.transfer, token, sender, recipient, amount)

    async def pay(
        self, token: str, holder: str, owner: str, amount: int, collector: str, fee: int
    ) -> tuple[TxReceipt, TxReceipt | None]:
        """As the simulated chain pays: two transfers, each a call the triggers see."""
        paid = await self.transfer(token, holder, owner, amount)
        return paid, (await self.transfer(token, holder, collector, fee) if fee else None)

    async def accrued_rewards(self, holder: str) -> list[RewardAmount]:
        return await self._call("accrued_rewards", self._inner.accrued_rewards, holder)

    async def claim_rewards(self, holder: str) -> ClaimReceipt:
        return await self._call("claim_rewards", self._inner.claim_rewards, holder)

    async def gas_cost(self, action: str) -> GasCost:
        return await self._call("gas_cost", self._inner.gas_cost, action)


def to(recipient: str) -> Callable[[Arguments], bool]:
    """Matches the transfers to ``recipient``."""
    return lambda arguments: arguments.get("recipient") == recipient


def with_chain(chains: Mapping[int, MarketChain], chain: CrashingChain) -> dict[int, MarketChain]:
    """``chains`` with ``chain`` in place of the port of its chain id."""
    return {**chains, chain.chain_id: chain}
