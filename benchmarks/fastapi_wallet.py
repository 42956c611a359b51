"""The comparison app of the partner-read benchmark: FastAPI on uvicorn doing one SQLAlchemy
Core primary-key read of the wallet and returning its row as JSON, in the two ways a
FastAPI app is written: ``async def`` (the read blocks the loop) and plain ``def``
(FastAPI runs it in its thread pool).

Run by ``benchmarks.partner_reads`` as ``python -m benchmarks.fastapi_wallet PORT`` with
``BENCH_DATABASE_URL`` (the service's own database). It reads the same row our
``GET /api/v1/{chain_id}/wallets/{wallet}`` reads, from the same file, on the same machine.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import uvicorn
from fastapi import FastAPI, HTTPException
from sqlalchemy import bindparam, select

from yieldagent.storage.db import create_db_engine
from yieldagent.storage.tables import WalletRow

_engine = create_db_engine(os.environ["BENCH_DATABASE_URL"])
_wallets = WalletRow.__table__  # type: ignore[attr-defined]
_BY_ID = select(_wallets).where(_wallets.c.id == bindparam("wallet_id"))
_ids: dict[str, int] = {}

app = FastAPI()


def _read(chain_id: int, wallet: str) -> dict[str, Any]:
    """The wallet's row, read by primary key (its id is looked up once per address)."""
    wallet_id = _ids.get(wallet)
    if wallet_id is None:
        with _engine.connect() as connection:
            found = connection.execute(
                select(_wallets.c.id).where(
                    _wallets.c.chain_id == chain_id, _wallets.c.address == wallet
                )
            ).scalar()
        if found is None:
            raise HTTPException(404, "Wallet not found")
        wallet_id = _ids[wallet] = int(found)
    with _engine.connect() as connection:
        row = connection.execute(_BY_ID, {"wallet_id": wallet_id}).first()
    if row is None:
        raise HTTPException(404, "Wallet not found")
    return {key: str(value) for key, value in row._mapping.items()}


@app.get("/api/v1/{chain_id}/wallets/{wallet}")
async def wallet(chain_id: int, wallet: str) -> dict[str, Any]:
    """The read on the event loop (the faster way here: SQLite answers in microseconds)."""
    return _read(chain_id, wallet)


@app.get("/threadpool/api/v1/{chain_id}/wallets/{wallet}")
def wallet_in_threadpool(chain_id: int, wallet: str) -> dict[str, Any]:
    """The read as FastAPI's documentation writes blocking I/O: a plain ``def``, which
    FastAPI runs in its thread pool."""
    return _read(chain_id, wallet)


def serve(port: int) -> None:
    """One uvicorn worker on ``port``, its socket bound with SO_REUSEPORT so that several
    such processes share the port (the kernel spreads the connections among them).

    The socket is made as a TCP one, so that asyncio sets TCP_NODELAY on each connection.
    ``uvicorn --workers 2``, and two of these on a socket made without the protocol,
    answered the fleet poll at about 45 ms a request at low CPU (720 req/s against 4,100
    for one worker): a stall of the socket, not FastAPI's cost, and no fair comparison.
    Made as TCP, two answered 6,800.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    # uvloop, as our serving processes run on (uvicorn would pick it anyway, installed)
    config = uvicorn.Config(app, loop="uvloop", log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    serve(int(sys.argv[1]))
