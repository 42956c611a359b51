"""Storage reads on the hot paths: the partner credentials lookup and a smart-account read."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.partners.smart_accounts import smart_account_address
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.smart_accounts import SmartAccountStore

OWNER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


def _per_call_us(call: Callable[[], object], count: int = 5000) -> float:
    for _ in range(200):
        call()
    start = time.perf_counter()
    for _ in range(count):
        call()
    return (time.perf_counter() - start) / count * 1e6


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        engine = create_db_engine(f"sqlite:///{Path(directory) / 'bench.db'}")
        migrate(engine)
        partners = PartnerStore(engine)
        partner, _ = partners.create("bench", PERMISSIONS)
        accounts = SmartAccountStore(engine)
        accounts.record(
            SmartAccount(8453, OWNER, "yield-agent", smart_account_address(OWNER), partner.id)
        )
        figures = {
            "partner_credentials_us": _per_call_us(lambda: partners.credentials("bench")),
            "smart_account_get_us": _per_call_us(lambda: accounts.get(8453, OWNER, "yield-agent")),
        }
        for name, value in figures.items():
            print(
                json.dumps(
                    {
                        "benchmark": "store_reads",
                        "figure": name,
                        "value": round(value, 1),
                        "backend": "sqlite",
                    }
                )
            )
        engine.dispose()
