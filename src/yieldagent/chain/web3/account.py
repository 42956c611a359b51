"""Calls through the smart account: ERC-7579 ``execute(bytes32 mode, bytes calldata)``.

The mode's first byte is the call type (0x00 single, 0x01 batch), the second the exec
type (0x00: revert on failure); the rest is zero. A single call's ``executionCalldata``
is ``abi.encodePacked(target, value, callData)``; a batch is
``abi.encode(Execution[])`` with ``Execution(address target, uint256 value, bytes
callData)``. One call goes as a single, several as one batch: one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from eth_abi.abi import encode
from eth_utils.address import to_canonical_address

from yieldagent.chain.web3.abis import ACCOUNT_EXECUTE
from yieldagent.chain.web3.protocols.base import Call

CALL_TYPE_SINGLE = 0x00
CALL_TYPE_BATCH = 0x01


def mode(call_type: int) -> bytes:
    """The 32-byte execution mode of ``call_type`` with the default exec type."""
    return bytes([call_type]) + bytes(31)


def execute_calldata(calls: Sequence[Call]) -> bytes:
    """The account's ``execute`` calldata that makes ``calls``, in order."""
    if not calls:
        raise ValueError("nothing to execute")
    if len(calls) == 1:
        [call] = calls
        packed = to_canonical_address(call.target) + call.value.to_bytes(32, "big") + call.data
        return ACCOUNT_EXECUTE.encode(mode(CALL_TYPE_SINGLE), packed)
    executions = [(c.target, c.value, c.data) for c in calls]
    batch = encode(["(address,uint256,bytes)[]"], [executions])
    return ACCOUNT_EXECUTE.encode(mode(CALL_TYPE_BATCH), batch)
