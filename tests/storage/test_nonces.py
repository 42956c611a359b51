"""Nonce leases: handed out once, given back, refilled when lapsed, shared by processes."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sqlalchemy import Engine

from yieldagent.storage.nonces import NonceStore

CHAIN = 8453
OPERATOR = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


class Wall:
    """A wall clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def store(engine: Engine, holder: str, wall: Wall | None = None) -> NonceStore:
    return NonceStore(engine, holder=holder, lease_seconds=60.0, wall=wall or Wall())


def test_nonces_follow_the_chain_then_count_on(engine: Engine) -> None:
    nonces = store(engine, "a")
    assert [nonces.reserve(CHAIN, OPERATOR, 5) for _ in range(3)] == [5, 6, 7]
    assert nonces.reserve(CHAIN, OPERATOR, 6) == 8  # the chain lags: the lease counts on
    assert nonces.reserve(CHAIN, OPERATOR, 20) == 20  # sent elsewhere: the chain leads
    assert nonces.reserve(CHAIN + 1, OPERATOR, 0) == 0  # each chain counts apart
    assert nonces.reserve(CHAIN, OPERATOR.lower(), 0) == 21  # one address, however written


def test_a_nonce_given_back_is_handed_out_first(engine: Engine) -> None:
    nonces = store(engine, "a")
    first, second, third = (nonces.reserve(CHAIN, OPERATOR, 0) for _ in range(3))
    nonces.release(CHAIN, OPERATOR, second)
    nonces.release(CHAIN, OPERATOR, first)
    assert nonces.leased(CHAIN, OPERATOR) == {0: None, 1: None, 2: "a"}
    assert nonces.reserve(CHAIN, OPERATOR, 0) == first
    assert nonces.reserve(CHAIN, OPERATOR, 0) == second
    assert nonces.reserve(CHAIN, OPERATOR, 0) == third + 1


def test_consumed_nonces_and_those_the_chain_has_are_forgotten(engine: Engine) -> None:
    nonces = store(engine, "a")
    for _ in range(4):
        nonces.reserve(CHAIN, OPERATOR, 0)
    nonces.consume(CHAIN, OPERATOR, 3)
    assert set(nonces.leased(CHAIN, OPERATOR)) == {0, 1, 2}
    nonces.release(CHAIN, OPERATOR, 1)
    assert nonces.reserve(CHAIN, OPERATOR, 2) == 4  # 1 was given back, but the chain has it
    assert set(nonces.leased(CHAIN, OPERATOR)) == {2, 4}


def test_a_lapsed_lease_is_refilled_only_if_the_chain_lacks_its_nonce(engine: Engine) -> None:
    wall = Wall()
    crashed = store(engine, "crashed", wall)
    for _ in range(3):
        crashed.reserve(CHAIN, OPERATOR, 0)  # 0, 1, 2; then the process dies
    alive = store(engine, "alive", wall)
    assert alive.reserve(CHAIN, OPERATOR, 1) == 3  # leases held: nothing is refilled
    wall.now += 61
    # The chain has 0 (and 1 is in its pool): 2 never arrived, and is refilled.
    assert alive.reserve(CHAIN, OPERATOR, 2) == 2
    assert alive.leased(CHAIN, OPERATOR) == {2: "alive", 3: "alive"}
    crashed.release(CHAIN, OPERATOR, 2)  # too late: it is no longer its lease
    crashed.consume(CHAIN, OPERATOR, 2)
    assert alive.leased(CHAIN, OPERATOR) == {2: "alive", 3: "alive"}


def test_a_reservation_may_hold_its_nonce_longer(engine: Engine) -> None:
    wall = Wall()
    slow = store(engine, "slow", wall)
    assert slow.reserve(CHAIN, OPERATOR, 0, hold_seconds=600) == 0
    wall.now += 300
    assert store(engine, "other", wall).reserve(CHAIN, OPERATOR, 0) == 1


def test_a_run_of_nonces_is_consecutive_after_the_gaps(engine: Engine) -> None:
    wall = Wall()
    nonces = store(engine, "a", wall)
    assert nonces.reserve_many(CHAIN, OPERATOR, 5, 4) == [5, 6, 7, 8]
    nonces.release(CHAIN, OPERATOR, 6)
    # the nonce given back comes first, then a run from the counter on
    assert nonces.reserve_many(CHAIN, OPERATOR, 5, 3) == [6, 9, 10]
    assert nonces.reserve_many(CHAIN, OPERATOR, 30, 2) == [30, 31]  # the chain leads
    assert nonces.leased(CHAIN, OPERATOR) == {30: "a", 31: "a"}


def test_a_run_refills_lapsed_leases_the_chain_lacks(engine: Engine) -> None:
    wall = Wall()
    crashed = store(engine, "crashed", wall)
    assert crashed.reserve_many(CHAIN, OPERATOR, 0, 5) == [0, 1, 2, 3, 4]
    wall.now += 61
    alive = store(engine, "alive", wall)
    # the chain has 0 and 1; 2..4 never arrived and are handed out again, then 5 and 6
    assert alive.reserve_many(CHAIN, OPERATOR, 2, 5) == [2, 3, 4, 5, 6]
    assert set(alive.leased(CHAIN, OPERATOR).values()) == {"alive"}


def test_a_batch_consumes_its_own_leases_at_once(engine: Engine) -> None:
    wall = Wall()
    mine, other = store(engine, "mine", wall), store(engine, "other", wall)
    assert mine.reserve_many(CHAIN, OPERATOR, 0, 4) == [0, 1, 2, 3]
    assert other.reserve(CHAIN, OPERATOR, 0) == 4
    mine.consume_many(CHAIN, OPERATOR, [0, 2, 4])  # 4 is not its lease: it stays
    mine.consume_many(CHAIN, OPERATOR, [])
    assert mine.leased(CHAIN, OPERATOR) == {1: "mine", 3: "mine", 4: "other"}


def test_a_run_takes_at_least_one_nonce(engine: Engine) -> None:
    with pytest.raises(ValueError, match="at least one"):
        store(engine, "a").reserve_many(CHAIN, OPERATOR, 0, 0)


_RESERVE_RUNS = """
import sys
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.nonces import NonceStore
nonces = NonceStore(create_db_engine(sys.argv[1]))
sys.stdin.readline()  # start together
for _ in range(int(sys.argv[3])):
    print(" ".join(str(n) for n in nonces.reserve_many(8453, sys.argv[2], 0, 7)))
"""


def test_processes_reserving_runs_at_once_get_disjoint_runs(
    database_url: str, engine: Engine
) -> None:
    """Four processes reserve ten runs of 7 nonces each at the same time: every run is
    consecutive, and together they are 0..279, each nonce once."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _RESERVE_RUNS, database_url, OPERATOR, "10"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outputs = [process.communicate(timeout=60) for process in processes]
    assert [process.returncode for process in processes] == [0] * 4, outputs
    runs = [[int(n) for n in line.split()] for out, _ in outputs for line in out.splitlines()]
    assert len(runs) == 40
    assert all(run == list(range(run[0], run[0] + 7)) for run in runs)
    assert sorted(n for run in runs for n in run) == list(range(280))


_RESERVE = """
import sys
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.nonces import NonceStore
nonces = NonceStore(create_db_engine(sys.argv[1]))
sys.stdin.readline()  # start together
print(" ".join(str(nonces.reserve(8453, sys.argv[2], 0)) for _ in range(int(sys.argv[3]))))
"""


def test_processes_reserving_at_once_never_share_a_nonce(database_url: str, engine: Engine) -> None:
    """Four processes, each with its own engine, reserve 40 nonces each at the same time."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _RESERVE, database_url, OPERATOR, "40"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outputs = [process.communicate(timeout=60) for process in processes]
    assert [process.returncode for process in processes] == [0] * 4, outputs
    handed = [int(n) for out, _ in outputs for n in out.split()]
    assert sorted(handed) == list(range(160))
