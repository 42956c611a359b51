"""The extra serving processes sign through the main process and never hold the key."""

from __future__ import annotations

import asyncio
import json
import os
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.composition.processes import ServingProcesses, serve_until_stopped
from yieldagent.config import Settings, load_settings
from yieldagent.domain.ports.signer import Signer

KEY = "0x" + "5e" * 32
PASSWORD = "a keystore password of its own"
TX: dict[str, int | str] = {
    "type": 2,
    "chainId": 8453,
    "nonce": 0,
    "to": "0x0000000000000000000000000000000000000001",
    "value": 0,
    "data": "0x",
    "gas": 21_000,
    "maxFeePerGas": 10**9,
    "maxPriorityFeePerGas": 10**6,
}


def _report(settings: Settings, connection: Connection, operator: Signer) -> None:
    """A child's target: what it was given, and a signature asked of the main process."""

    async def run() -> None:
        signed = await operator.sign_transaction(TX)
        message = await operator.sign_message(b"hello")
        found = {
            "key": settings.operator_private_key is not None,
            "password": settings.operator_key_password.reveal(),
            "environ": [v for v in os.environ.values() if "5e5e5e5e" in v or PASSWORD in v],
            "address": operator.address,
            "raw": signed.raw.hex(),
            "message": message.hex(),
        }
        (settings.data_dir / f"child-{os.getpid()}.json").write_text(json.dumps(found))
        await serve_until_stopped(connection, 1)

    asyncio.run(run())


async def test_a_serving_process_signs_through_the_main_one_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YIELDAGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("YIELDAGENT_OPERATOR_PRIVATE_KEY", KEY)
    monkeypatch.setenv("YIELDAGENT_OPERATOR_KEY_PASSWORD", PASSWORD)
    settings = load_settings()  # as the service reads them: from the environment
    signer = LocalKeySigner(KEY)
    children = ServingProcesses(_report, settings, 1, signer)
    await children.start()
    await children.stop(1.0)
    [report] = await asyncio.to_thread(
        lambda: [json.loads(p.read_text()) for p in tmp_path.glob("child-*.json")]
    )
    assert report["key"] is False and report["password"] == "" and report["environ"] == []
    assert report["address"] == signer.address
    assert report["raw"] == (await signer.sign_transaction(TX)).raw.hex()
    assert report["message"] == (await signer.sign_message(b"hello")).hex()
