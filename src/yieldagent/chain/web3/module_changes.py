"""The operator module's change logs on a web3 chain (``ModuleChangeSource``).

``ChangeProposed(bytes32 indexed id, Change change, uint256 eta)``, ``ChangeApplied(bytes32
indexed id, Change change)`` and ``ChangeCancelled(bytes32 indexed id)``, read with one
``eth_getLogs`` per range (the three topics at once), never past the head less the
chain's confirmations. A proposal's time is its ``eta`` less the module's ``delay`` (read
once): ``proposeChange`` sets ``eta = block.timestamp + delay``, so no block read is needed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from eth_abi.abi import decode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from web3 import AsyncHTTPProvider, AsyncWeb3

from yieldagent.chain.web3.deployment_check import DELAY
from yieldagent.chain.web3.module_listing import CHANGE_TYPE, ZERO_ADDRESS, ChangeKind, Kind
from yieldagent.chain.web3.reader import RpcReader
from yieldagent.domain.ports.module_changes import (
    APPLIED,
    CANCELLED,
    OPERATOR,
    RULE,
    TOKEN,
    ChangeResolved,
    ModuleChange,
    ModuleChangeLogs,
)

PROPOSED_TOPIC = "0x" + keccak(text=f"ChangeProposed(bytes32,{CHANGE_TYPE},uint256)").hex()
APPLIED_TOPIC = "0x" + keccak(text=f"ChangeApplied(bytes32,{CHANGE_TYPE})").hex()
CANCELLED_TOPIC = "0x" + keccak(text="ChangeCancelled(bytes32)").hex()
_KIND_NAMES = {ChangeKind.RULE: RULE, ChangeKind.TOKEN: TOKEN, ChangeKind.OPERATOR: OPERATOR}


class Web3ModuleChanges:
    """The change logs of the module at ``module`` on the node at ``url``."""

    def __init__(self, w3: AsyncWeb3[Any], chain_id: int, module: str, confirmations: int) -> None:
        self.reader = RpcReader(w3)
        self.chain_id = chain_id
        self.module = to_checksum_address(module)
        self.confirmations = confirmations
        self._delay: int | None = None

    @classmethod
    def connect(cls, url: str, chain_id: int, module: str, confirmations: int) -> Web3ModuleChanges:
        """The source on the node at ``url``."""
        return cls(AsyncWeb3(AsyncHTTPProvider(url)), chain_id, module, confirmations)

    async def confirmed_head(self) -> int:
        head = int(str(await self.reader.request("eth_blockNumber", [])), 16)
        # One confirmation is the head itself, as the adapter counts a transfer's.
        return max(head - self.confirmations + 1, 0)

    async def change_logs(self, from_block: int, to_block: int) -> ModuleChangeLogs:
        if self._delay is None:
            self._delay = int(await self.reader.call(self.module, DELAY))
        logs = await self.reader.request(
            "eth_getLogs",
            [
                {
                    "address": self.module,
                    "fromBlock": hex(from_block),
                    "toBlock": hex(to_block),
                    "topics": [[PROPOSED_TOPIC, APPLIED_TOPIC, CANCELLED_TOPIC]],
                }
            ],
        )
        ordered = sorted(
            logs, key=lambda log: (int(log["blockNumber"], 16), int(log["logIndex"], 16))
        )
        proposed: list[ModuleChange] = []
        resolved: list[ChangeResolved] = []
        for log in ordered:
            topic = str(log["topics"][0]).lower()
            change_id = str(log["topics"][1]).lower()
            block, index = int(log["blockNumber"], 16), int(log["logIndex"], 16)
            if topic == PROPOSED_TOPIC:
                proposed.append(self._proposal(change_id, log["data"], block, index))
            elif topic in (APPLIED_TOPIC, CANCELLED_TOPIC):
                outcome = APPLIED if topic == APPLIED_TOPIC else CANCELLED
                resolved.append(ChangeResolved(change_id, outcome, block, index))
        return ModuleChangeLogs(proposed, resolved)

    def _proposal(self, change_id: str, data: str, block: int, index: int) -> ModuleChange:
        assert self._delay is not None
        change, eta = decode([CHANGE_TYPE, "uint256"], bytes.fromhex(data.removeprefix("0x")))
        kind, subject, selector, rule, listing = change
        kind = ChangeKind(kind)
        if kind == ChangeKind.RULE:
            rule_kind = Kind(rule[0])
            new_value = "unlisted" if rule_kind == Kind.NONE else rule_kind.name.lower()
        elif kind == ChangeKind.TOKEN:
            feed = to_checksum_address(listing[0])
            new_value = "unlisted" if feed == to_checksum_address(ZERO_ADDRESS) else feed
        else:
            new_value = to_checksum_address(subject)
        return ModuleChange(
            chain_id=self.chain_id,
            module=self.module,
            change_id=change_id,
            kind=_KIND_NAMES[kind],
            subject=to_checksum_address(subject),
            selector="0x" + bytes(selector).hex() if kind == ChangeKind.RULE else "",
            new_value=new_value,
            proposed_at=datetime.fromtimestamp(int(eta) - self._delay, UTC),
            effective_at=datetime.fromtimestamp(int(eta), UTC),
            block=block,
            log_index=index,
        )

    async def close(self) -> None:
        """Closes the node's connections."""
        await self.reader.w3.provider.disconnect()
