"""Constraints a partner puts on an agent: their kinds, parameters and checks.

kind                                 params
min_protocols                        min_protocols ≥ 1, min_fraction_per_protocol 0.01–1
                                     (default 0.05)
max_allocation_amount_per_protocol   protocol, max_amount ≥ 0 (smallest units)
exclude_protocol                     protocol
max_amount_per_protocol              protocol, max_ratio 0–1
min_amount                           min_amount ≥ 0: no position smaller than this
min_allocation_amount_per_protocol   protocol, min_amount ≥ 0

``position_bounds`` says what they let one protocol hold of a wallet's total. The
service's own ``Thresholds`` (when a rebalance is worth its cost) are the other rule a plan
keeps; the optimizer plans within both, and the risk guards tighten both.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

from yieldagent.domain.amounts import MAX_AMOUNT, parse_amount
from yieldagent.domain.errors import FieldViolation, InvalidInput

DEFAULT_MIN_FRACTION = 0.05
_AMOUNT_MESSAGE = "Input should be a non-negative integer of at most 2**256 - 1"

_PARAMS: dict[str, tuple[str, ...]] = {
    "min_protocols": ("min_protocols",),
    "max_allocation_amount_per_protocol": ("protocol", "max_amount"),
    "exclude_protocol": ("protocol",),
    "max_amount_per_protocol": ("protocol", "max_ratio"),
    "min_amount": ("min_amount",),
    "min_allocation_amount_per_protocol": ("protocol", "min_amount"),
}
KINDS = tuple(_PARAMS)
PARAMS: Mapping[str, tuple[str, ...]] = _PARAMS
"""Each kind's required parameters."""
OPTIONAL_PARAMS: Mapping[str, tuple[str, ...]] = {"min_protocols": ("min_fraction_per_protocol",)}
"""The parameters a kind takes with a default (``DEFAULT_MIN_FRACTION``)."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When a rebalance is worth its cost (``domain.optimizer.rebalance`` explains each)."""

    horizon_days: float = 30.0
    min_apr_gain: float = 0.25
    max_break_even_days: float = 10.0


@dataclass(frozen=True, slots=True)
class Constraints:
    """Every constraint of a wallet, gathered by what it limits."""

    min_protocols: int = 1
    min_fraction: float = DEFAULT_MIN_FRACTION
    excluded: frozenset[str] = frozenset()
    max_amount: Mapping[str, int] = field(default_factory=dict)
    max_ratio: Mapping[str, float] = field(default_factory=dict)
    min_position: int = 0
    min_amount: Mapping[str, int] = field(default_factory=dict)

    def protocols(self) -> set[str]:
        """Every protocol name the constraints mention."""
        return (
            set(self.excluded) | set(self.max_amount) | set(self.max_ratio) | set(self.min_amount)
        )

    def to_json(self) -> str:
        """A storable form."""
        data = asdict(self)
        data["excluded"] = sorted(self.excluded)
        data["max_amount"] = {k: str(v) for k, v in self.max_amount.items()}
        data["min_position"] = str(self.min_position)
        data["min_amount"] = {k: str(v) for k, v in self.min_amount.items()}
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Constraints:
        """Reads what ``to_json`` wrote."""
        data = json.loads(text)
        return cls(
            min_protocols=data["min_protocols"],
            min_fraction=data["min_fraction"],
            excluded=frozenset(data["excluded"]),
            max_amount={k: int(v) for k, v in data["max_amount"].items()},
            max_ratio=data["max_ratio"],
            min_position=int(data["min_position"]),
            min_amount={k: int(v) for k, v in data["min_amount"].items()},
        )


@functools.lru_cache(maxsize=1024)
def _exact(ratio: float) -> tuple[int, int]:
    """A ratio as written (0.05 is exactly 1/20), for exact amounts: numerator, denominator."""
    exact = Fraction(str(ratio))
    return exact.numerator, exact.denominator


@dataclass(frozen=True, slots=True)
class Bounds:
    """The least and the most one protocol may hold, if it is used."""

    low: int
    cap: int


def position_bounds(total: int, name: str, rules: Constraints) -> Bounds:
    """What ``rules`` let protocol ``name`` hold of ``total``, if it is used: at most
    ``total``, its max_allocation_amount and its max_ratio of ``total``; at least
    min_amount, its min_allocation_amount and, with min_protocols above 1, min_fraction of
    ``total`` (rounded up). Ratios are read as written (``_exact``)."""
    cap = total
    if name in rules.max_amount:
        cap = min(cap, rules.max_amount[name])
    if name in rules.max_ratio:
        numerator, denominator = _exact(rules.max_ratio[name])
        cap = min(cap, total * numerator // denominator)
    low = max(rules.min_position, rules.min_amount.get(name, 0))
    if rules.min_protocols > 1:
        numerator, denominator = _exact(rules.min_fraction)
        low = max(low, -(-total * numerator // denominator))
    return Bounds(low, cap)


@dataclass(frozen=True, slots=True)
class RawConstraint:
    """A constraint as received: its kind and the parameters that were given."""

    kind: str
    params: Mapping[str, Any]


def parse_constraints(raw: Sequence[RawConstraint]) -> Constraints:
    """Checks and gathers constraints; InvalidInput names every malformed one."""
    violations: list[FieldViolation] = []
    gathered: dict[str, Any] = {
        "excluded": set(),
        "max_amount": {},
        "max_ratio": {},
        "min_amount": {},
    }

    def bad(index: int, name: str | None, message: str, kind: str = "value_error") -> None:
        loc: tuple[str | int, ...] = (
            ("constraints", index, "params", name) if name else ("constraints", index, "kind")
        )
        violations.append(FieldViolation(loc, message, kind))

    for index, constraint in enumerate(raw):
        if constraint.kind not in _PARAMS:
            bad(index, None, f"Input should be one of {', '.join(KINDS)}", "literal_error")
            continue
        params = constraint.params
        missing = [name for name in _PARAMS[constraint.kind] if params.get(name) is None]
        for name in missing:
            bad(index, name, "Field required", "missing")
        if missing:
            continue
        protocol = params.get("protocol")
        if constraint.kind == "min_protocols":
            count, fraction = params["min_protocols"], params.get("min_fraction_per_protocol")
            fraction = DEFAULT_MIN_FRACTION if fraction is None else fraction
            if count < 1:
                bad(index, "min_protocols", "Input should be at least 1")
            if not 0.01 <= fraction <= 1:
                bad(index, "min_fraction_per_protocol", "Input should be between 0.01 and 1")
            gathered["min_protocols"], gathered["min_fraction"] = count, fraction
        elif constraint.kind == "exclude_protocol":
            gathered["excluded"].add(protocol)
        elif constraint.kind == "max_allocation_amount_per_protocol":
            amount = _amount(params["max_amount"])
            if amount is None:
                bad(index, "max_amount", _AMOUNT_MESSAGE)
            else:
                gathered["max_amount"][protocol] = amount
        elif constraint.kind == "max_amount_per_protocol":
            if not 0 <= params["max_ratio"] <= 1:
                bad(index, "max_ratio", "Input should be between 0 and 1")
            gathered["max_ratio"][protocol] = params["max_ratio"]
        else:  # min_amount, min_allocation_amount_per_protocol
            amount = _amount(params["min_amount"])
            if amount is None:
                bad(index, "min_amount", _AMOUNT_MESSAGE)
            elif constraint.kind == "min_amount":
                gathered["min_position"] = amount
            else:
                gathered["min_amount"][protocol] = amount
    if violations:
        raise InvalidInput(violations)
    gathered["excluded"] = frozenset(gathered["excluded"])
    return Constraints(**gathered)


def listed(rules: Constraints) -> list[RawConstraint]:
    """The constraints ``rules`` gathers, one per kind and protocol, in the order of
    ``KINDS``: what ``parse_constraints`` reads back into ``rules``. ``min_protocols`` is
    listed unless it says what no constraint does (1, at the default fraction)."""
    found: list[RawConstraint] = []
    if rules.min_protocols != 1 or rules.min_fraction != DEFAULT_MIN_FRACTION:
        found.append(
            RawConstraint(
                "min_protocols",
                {
                    "min_protocols": rules.min_protocols,
                    "min_fraction_per_protocol": rules.min_fraction,
                },
            )
        )
    for protocol, amount in sorted(rules.max_amount.items()):
        found.append(
            RawConstraint(
                "max_allocation_amount_per_protocol", {"protocol": protocol, "max_amount": amount}
            )
        )
    found += [RawConstraint("exclude_protocol", {"protocol": p}) for p in sorted(rules.excluded)]
    for protocol, ratio in sorted(rules.max_ratio.items()):
        found.append(
            RawConstraint("max_amount_per_protocol", {"protocol": protocol, "max_ratio": ratio})
        )
    if rules.min_position:
        found.append(RawConstraint("min_amount", {"min_amount": rules.min_position}))
    for protocol, amount in sorted(rules.min_amount.items()):
        found.append(
            RawConstraint(
                "min_allocation_amount_per_protocol", {"protocol": protocol, "min_amount": amount}
            )
        )
    return found


def _amount(value: Any) -> int | None:
    """A non-negative amount of at most ``MAX_AMOUNT``, or None: the one checked parser."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_AMOUNT else None
    if not isinstance(value, str):
        return None
    try:
        return parse_amount(value, (), minimum=0)
    except InvalidInput:
        return None
