"""A request's constraints as the domain reads them (``domain.constraints``)."""

from __future__ import annotations

from collections.abc import Sequence

from yieldagent.domain.constraints import RawConstraint
from yieldagent.v1 import types_pb2

_PARAM_FIELDS = (
    "min_protocols",
    "min_fraction_per_protocol",
    "protocol",
    "max_amount",
    "max_ratio",
    "min_amount",
)


_AMOUNTS = frozenset({"max_amount", "min_amount"})


def raw_constraints(constraints: Sequence[types_pb2.Constraint]) -> list[RawConstraint]:
    """Constraints as received: the parameters that were set."""
    return [
        RawConstraint(
            c.kind,
            {name: getattr(c.params, name) for name in _PARAM_FIELDS if c.params.HasField(name)},
        )
        for c in constraints
    ]


def constraint_messages(constraints: Sequence[RawConstraint]) -> list[types_pb2.Constraint]:
    """Constraints as requests take them: each parameter in its field, amounts as decimal
    strings."""
    found = []
    for constraint in constraints:
        params = types_pb2.ConstraintParams()
        for name, value in constraint.params.items():
            setattr(params, name, str(value) if name in _AMOUNTS else value)
        found.append(types_pb2.Constraint(kind=constraint.kind, params=params))
    return found
