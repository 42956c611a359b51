"""Token amounts: the exact integers of a token's smallest unit, and their one parser."""

from __future__ import annotations

from yieldagent.domain.errors import InvalidInput, Location

MAX_AMOUNT = 2**256 - 1
"""The largest token amount there is: an EVM ``uint256``."""

_MAX_DIGITS = len(str(MAX_AMOUNT))


def parse_amount(text: str, loc: Location, *, minimum: int = 1) -> int:
    """A token amount in the smallest unit, written in ASCII decimal digits.

    It must lie between ``minimum`` (1 by default, 0 for holdings) and ``MAX_AMOUNT``.
    Only the digits 0-9 count: ``str.isdigit`` also accepts "²" or "٣", which ``int``
    then refuses. Nothing longer than ``MAX_AMOUNT`` reaches ``int``, whose conversion
    of very long strings fails by itself.
    """
    if not text:
        raise InvalidInput.field(loc, "Field required", "missing")
    if not (text.isascii() and text.isdigit()):
        raise InvalidInput.field(
            loc, "Input should be an integer written in decimal digits", "int_parsing"
        )
    digits = text.lstrip("0")
    if len(digits) > _MAX_DIGITS or (len(digits) == _MAX_DIGITS and int(digits) > MAX_AMOUNT):
        raise InvalidInput.field(
            loc, "Input should be less than or equal to 2**256 - 1", "less_than_equal"
        )
    value = int(digits) if digits else 0
    if value < minimum:
        raise InvalidInput.field(
            loc, f"Input should be greater than or equal to {minimum}", "greater_than_equal"
        )
    return value
