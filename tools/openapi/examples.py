"""The example value of each request field, by name, for the request samples the docs
page shows: what a partner copies should work as it is (Base, a checksummed address,
an amount of USDC), not the type's extreme (``"chain": -2147483648``).

An example is given only where the field's type takes it, so a name that means two
things (``eoa``: an address in a body, a flag on the wallet read) keeps the one that fits.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from tools.openapi.answers import CHAIN, EOA, TX_HASH, USDC, WALLET

AMOUNT = 1_000_000_000
"""1,000 USDC in its smallest unit."""

EXAMPLES: dict[str, Any] = {
    "chain_id": CHAIN,
    "chain": CHAIN,
    "wallet": WALLET,
    "wallet_address": WALLET,
    "eoa": EOA,
    "token": USDC,
    "initial_token": USDC,
    "token_address": USDC,
    "tx_hash": TX_HASH,
    "amount": AMOUNT,
    "total_capital": AMOUNT,
    "max_amount": 500_000_000,
    "min_amount": 10_000_000,
    "selected_protocols": ["aave", "moonwell"],
    "protocols": ["aave", "moonwell"],
    "protocol": "aave",
    "kind": "min_protocols",
    "min_protocols": 2,
    "min_fraction_per_protocol": 0.1,
    "max_ratio": 0.5,
    "agent_id": "yield-agent",
    "execution_id": "0c1f5e0e-6d9b-4a1e-9f3e-2b7c8d9e0a11",
    "page": 1,
    "limit": 20,
    "sort": "date_desc",
    "start_date": "2026-11-01T00:00:00Z",
    "end_date": "2026-12-01T00:00:00Z",
    "from": "2026-11-01T00:00:00Z",
    "from_date": "2026-11-01T00:00:00Z",
    "to": "2026-12-01T00:00:00Z",
    "interval": "day",
    "period": "all",
    "token_price": 1.0,
    "is_staked": True,
    "transfer": True,
    "use_exact_end_date": False,
}
"""Example values by request field name."""

_TAKES = {
    FieldDescriptor.TYPE_STRING: (str,),
    FieldDescriptor.TYPE_INT32: (int,),
    FieldDescriptor.TYPE_INT64: (int,),
    FieldDescriptor.TYPE_DOUBLE: (float,),
    FieldDescriptor.TYPE_BOOL: (bool,),
}


def example_of(member: FieldDescriptor, integer: bool) -> Any | None:
    """The example of a request field (a list for a repeated one), or None when there is
    none that its type takes; ``integer``: a decimal string the edge takes as a JSON
    integer too (an amount), whose example is an integer."""
    value = EXAMPLES.get(member.name)
    if value is None or member.type not in _TAKES:
        return None
    items = value if isinstance(value, list) else [value]
    if member.is_repeated != isinstance(value, list):
        return None
    kinds = (int,) if integer else _TAKES[member.type]
    fits = all(isinstance(v, kinds) and (bool in kinds) == isinstance(v, bool) for v in items)
    return value if fits else None
