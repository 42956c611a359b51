"""The holder's history named from Transfer logs, as the simulator names its transactions."""

from __future__ import annotations

from typing import Any, cast

from eth_utils.address import to_checksum_address

from yieldagent.chain.web3.abis import TRANSFER_TOPIC
from yieldagent.chain.web3.history import (
    ZERO_ADDRESS,
    Counterparties,
    TransferLog,
    accounts_touched,
    block_ranges,
    classify,
    parse_transfer,
)
from yieldagent.chain.web3.reader import RpcReader


def _address(n: int) -> str:
    return str(to_checksum_address(f"0x{n:040x}"))


HOLDER, OWNER, STRANGER = _address(0xA1), _address(0xA2), _address(0xA3)
USDC, COMP = _address(0x05DC), _address(0xC0)
A_TOKEN, VAULT, REWARDS, ROUTER = _address(0xAA), _address(0x4626), _address(0x4E), _address(0x5A)
PARTIES = Counterparties(
    token=USDC,
    custodies={A_TOKEN: "aave", VAULT: "morpho_gauntlet_usdc_prime"},
    reward_token=COMP,
    rewards=frozenset({REWARDS}),
    router=ROUTER,
)


def _log(tx: int, index: int, token: str, sender: str, recipient: str, amount: int) -> TransferLog:
    return TransferLog(
        f"0x{tx:064x}", index, 100 + tx, 1_000 + tx, token, sender, recipient, amount
    )


def test_each_kind_is_named_as_the_simulator_names_it() -> None:
    logs = [
        _log(1, 0, USDC, ZERO_ADDRESS, HOLDER, 5_000),  # minted to the account
        _log(2, 3, USDC, OWNER, HOLDER, 1_000),  # a deposit from the owner
        _log(3, 2, USDC, HOLDER, A_TOKEN, 700),  # supply to Aave (custody: the aToken)
        _log(4, 1, USDC, VAULT, HOLDER, 200),  # withdrawal from the vault
        _log(5, 0, COMP, ZERO_ADDRESS, HOLDER, 9),  # CometRewards mints the claim
        _log(6, 4, COMP, REWARDS, HOLDER, 3),  # or pays it from its balance
        _log(7, 0, USDC, HOLDER, OWNER, 50),  # payout to the owner
        _log(8, 0, USDC, HOLDER, STRANGER, 1),  # anything else
    ]
    events = classify(HOLDER.lower(), logs, PARTIES)
    assert [(e.kind, e.sender, e.recipient, e.amount) for e in events] == [
        ("mint", ZERO_ADDRESS, HOLDER, 5_000),
        ("transfer", OWNER, HOLDER, 1_000),
        ("supply", HOLDER, "aave", 700),
        ("withdraw", "morpho_gauntlet_usdc_prime", HOLDER, 200),
        ("claim", ZERO_ADDRESS, HOLDER, 9),
        ("claim", REWARDS, HOLDER, 3),
        ("transfer", HOLDER, OWNER, 50),
        ("transfer", HOLDER, STRANGER, 1),
    ]
    assert [(e.block_number, e.log_index, e.timestamp) for e in events][:3] == [
        (101, 0, 1_001),
        (102, 3, 1_002),
        (103, 2, 1_003),
    ]


def test_a_swap_is_one_event_with_both_sides() -> None:
    logs = [
        _log(9, 1, COMP, HOLDER, ROUTER, 12),  # the reward token in
        _log(9, 2, USDC, ROUTER, HOLDER, 34),  # the wallet token back
        _log(10, 0, USDC, ROUTER, HOLDER, 5),  # the router paying alone is a plain transfer
    ]
    [swap, other] = classify(HOLDER, logs, PARTIES)
    assert (swap.kind, swap.token, swap.amount, swap.token_out, swap.amount_out) == (
        "swap",
        COMP,
        12,
        USDC,
        34,
    )
    assert (swap.sender, swap.recipient, swap.log_index) == (HOLDER, HOLDER, 1)
    assert (other.kind, other.amount) == ("transfer", 5)


def test_events_come_in_chain_order() -> None:
    logs = [_log(2, 5, USDC, OWNER, HOLDER, 1), _log(2, 1, USDC, OWNER, HOLDER, 2)]
    events = classify(HOLDER, logs, PARTIES)
    assert [e.log_index for e in events] == [1, 5]


def test_parse_reads_raw_json_rpc_logs_and_skips_others() -> None:
    topics = [
        "0x" + TRANSFER_TOPIC.hex(),
        "0x" + "00" * 12 + OWNER[2:],
        "0x" + "00" * 12 + HOLDER[2:],
    ]
    raw = {
        "address": USDC.lower(),
        "topics": topics,
        "data": "0x" + f"{42:064x}",
        "transactionHash": "0x" + "AB" * 32,
        "logIndex": "0x3",
        "blockNumber": "0x10",
        "blockTimestamp": "0x64",
    }
    parsed = parse_transfer(raw)
    assert parsed == TransferLog("0x" + "ab" * 32, 3, 16, 100, USDC, OWNER, HOLDER, 42)
    nft = {**raw, "topics": [*topics, "0x" + "00" * 31 + "07"], "data": "0x"}
    assert parse_transfer(nft) is None
    approval = {**raw, "topics": ["0x" + "11" * 32, *topics[1:]]}
    assert parse_transfer(approval) is None


def test_block_ranges_cover_every_block_once() -> None:
    assert block_ranges(10, 14, 2) == [(10, 11), (12, 13), (14, 14)]
    assert block_ranges(10, 10, 2_000) == [(10, 10)]
    assert block_ranges(11, 10, 5) == []


class _Node:
    """A reader over fixed logs that filters ``eth_getLogs`` as a node does, and keeps
    the filters it was asked."""

    def __init__(self, logs: list[dict[str, Any]]) -> None:
        self.logs = logs
        self.filters: list[dict[str, Any]] = []

    async def request(self, method: str, params: list[Any]) -> list[dict[str, Any]]:
        assert method == "eth_getLogs"
        [f] = params
        self.filters.append(f)

        def matches(log: dict[str, Any]) -> bool:
            block = int(log["blockNumber"], 16)
            if not int(f["fromBlock"], 16) <= block <= int(f["toBlock"], 16):
                return False
            if log["address"] not in f["address"]:
                return False
            for wanted, topic in zip(f["topics"], log["topics"], strict=False):
                if wanted is not None and topic not in (
                    wanted if isinstance(wanted, list) else [wanted]
                ):
                    return False
            return True

        return [log for log in self.logs if matches(log)]


def _raw(block: int, index: int, token: str, sender: str, recipient: str) -> dict[str, Any]:
    return {
        "address": token,
        "topics": [
            "0x" + TRANSFER_TOPIC.hex(),
            "0x" + "00" * 12 + sender[2:].lower(),
            "0x" + "00" * 12 + recipient[2:].lower(),
        ],
        "data": "0x" + f"{1:064x}",
        "transactionHash": f"0x{block:062x}{index:02x}",
        "logIndex": hex(index),
        "blockNumber": hex(block),
    }


async def test_the_fleets_transfer_watch_names_each_account_with_its_first_block() -> None:
    fleet = [_address(0xF00 + i) for i in range(5)]
    node = _Node(
        [
            _raw(12, 0, USDC, STRANGER, fleet[1]),  # a deposit nobody announced
            _raw(14, 1, USDC, fleet[1], OWNER),
            _raw(15, 0, COMP, REWARDS, fleet[3]),  # the reward token is watched too
            _raw(13, 0, USDC, fleet[4], fleet[2]),
            _raw(16, 0, _address(0xDA1), STRANGER, fleet[0]),  # not a watched token
            _raw(9, 0, USDC, STRANGER, fleet[0]),  # before the range
            _raw(17, 0, USDC, STRANGER, OWNER),  # not the fleet's
        ]
    )
    found = await accounts_touched(
        cast(RpcReader, node), [USDC, COMP], [a.lower() for a in fleet], 10, 16, 4, 2
    )
    lower = [a.lower() for a in fleet]
    assert found == {lower[1]: 12, lower[2]: 13, lower[3]: 15, lower[4]: 13}
    # two ranges of 4 blocks, three topic groups of at most 2 accounts, each way
    assert len(node.filters) == 2 * 3 * 2
    assert {(f["fromBlock"], f["toBlock"]) for f in node.filters} == {
        ("0xa", "0xd"),
        ("0xe", "0x10"),
    }
    assert all(len(f["topics"][-1]) <= 2 for f in node.filters)
