"""Two replicas, one operator key: each process, with its own engine on the same database,
sends 20 transactions at once; all 40 are mined, with nonces 0..39, none lost or shared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from eth_account import Account
from sqlalchemy import Engine
from web3 import HTTPProvider, Web3

from support.anvil import ROOT, Anvil, Deployed, dev_key

pytestmark = pytest.mark.evm

PER_REPLICA = 20
# A dev account of its own per backend: each run starts from nonce 0 on the one anvil.
ACCOUNT = {"sqlite": 6, "postgresql": 7}

_REPLICA = """
import asyncio, json, sys
from web3 import AsyncHTTPProvider, AsyncWeb3
from support.anvil import CHAIN_ID, Deployed, dev_key
from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.web3.transactions import SendSettings, TransactionSender
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.nonces import NonceStore

database, node, account, count, target = sys.argv[1:6]
contract = Deployed(target, json.loads(sys.stdin.readline()))


async def main() -> None:
    w3 = AsyncWeb3(AsyncHTTPProvider(node))
    sender = TransactionSender(
        w3,
        CHAIN_ID,
        LocalKeySigner(dev_key(int(account))),
        NonceStore(create_db_engine(database)),
        SendSettings(receipt_timeout_seconds=10, poll_seconds=0.05),
    )
    sys.stdin.readline()  # every replica starts at once
    receipts = await asyncio.gather(
        *(sender.send(contract.address, contract.calldata("succeed", i)) for i in range(int(count)))
    )
    await w3.provider.disconnect()
    print(json.dumps([r.tx_hash for r in receipts]))


asyncio.run(main())
"""


def _start_replica(
    database_url: str, anvil: Anvil, account: int, reverter: Deployed
) -> subprocess.Popen[str]:
    arguments = [database_url, anvil.url, str(account), str(PER_REPLICA), reverter.address]
    path = os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))
    replica = subprocess.Popen(
        [sys.executable, "-c", _REPLICA, *arguments],
        env={**os.environ, "PYTHONPATH": path},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert replica.stdin is not None
    replica.stdin.write(json.dumps(reverter.abi) + "\n")
    replica.stdin.flush()
    return replica


def test_two_replicas_sending_from_one_key_never_collide(
    database_url: str, engine: Engine, anvil: Anvil, reverter: Deployed
) -> None:
    account = ACCOUNT[engine.dialect.name]
    operator = Account.from_key(dev_key(account)).address
    replicas = [_start_replica(database_url, anvil, account, reverter) for _ in range(2)]
    for replica in replicas:
        assert replica.stdin is not None
        replica.stdin.write("go\n")
        replica.stdin.flush()
    outputs = [replica.communicate(timeout=120) for replica in replicas]
    assert [replica.returncode for replica in replicas] == [0, 0], [err for _, err in outputs]

    sent = [json.loads(out) for out, _ in outputs]
    hashes = [h for replica_hashes in sent for h in replica_hashes]
    assert len(hashes) == 2 * PER_REPLICA == len(set(hashes))
    w3 = Web3(HTTPProvider(anvil.url))
    mined: list[Any] = [w3.eth.get_transaction_receipt(h) for h in hashes]
    assert all(receipt["status"] == 1 for receipt in mined)
    nonces = sorted(w3.eth.get_transaction(h)["nonce"] for h in hashes)
    assert nonces == list(range(2 * PER_REPLICA))  # no gap, no collision
    assert w3.eth.get_transaction_count(operator) == 2 * PER_REPLICA  # nothing else was sent
