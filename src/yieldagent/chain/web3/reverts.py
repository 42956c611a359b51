"""Revert reasons, decoded from a revert's return data.

Solidity reverts with ``Error(string)`` (``require``, ``revert("…")``), with
``Panic(uint256)`` (assert, overflow, division by zero…), or with a custom error, of
which only the selector is known without the contract's ABI.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eth_abi.abi import decode
from eth_abi.exceptions import DecodingError

ERROR_SELECTOR = bytes.fromhex("08c379a0")  # Error(string)
PANIC_SELECTOR = bytes.fromhex("4e487b71")  # Panic(uint256)

PANIC_CODES = {
    0x00: "generic compiler panic",
    0x01: "assertion failed",
    0x11: "arithmetic overflow or underflow",
    0x12: "division or modulo by zero",
    0x21: "invalid enum value",
    0x22: "corrupt storage byte array",
    0x31: "pop on an empty array",
    0x32: "array index out of bounds",
    0x41: "out of memory",
    0x51: "call to an uninitialized function",
}


def revert_data(raw: object) -> bytes | None:
    """The return data a node attached to a revert (``error.data``): hex, or a mapping
    that holds it under ``data`` (some nodes nest it). None when there is none."""
    if isinstance(raw, Mapping):
        return revert_data(_nested(raw))
    if isinstance(raw, bytes | bytearray):
        return bytes(raw)
    if isinstance(raw, str) and raw.startswith("0x"):
        try:
            return bytes.fromhex(raw[2:])
        except ValueError:
            return None
    return None


def _nested(raw: Mapping[str, Any]) -> object:
    if "data" in raw:
        return raw["data"]
    return next((v for v in raw.values() if isinstance(v, str) and v.startswith("0x")), None)


def revert_reason(data: bytes | None) -> str:
    """A readable reason for a revert with return ``data``: the contract's words, decoded.
    Without data it is only known that it reverted (the node's own words are not told)."""
    if not data:
        return "reverted without a reason"
    selector, body = data[:4], data[4:]
    try:
        if selector == ERROR_SELECTOR:
            (text,) = decode(["string"], body)
            return str(text)
        if selector == PANIC_SELECTOR:
            (code,) = decode(["uint256"], body)
            return f"Panic(0x{code:02x}): {PANIC_CODES.get(code, 'unknown panic code')}"
    except (DecodingError, OverflowError, UnicodeDecodeError):
        pass
    if len(data) < 4:
        return f"reverted with data 0x{data.hex()}"
    return f"custom error 0x{selector.hex()}"
