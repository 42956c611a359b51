"""The signer port answered by another process, over a pipe: how the extra serving
processes sign without the key.

The main process alone decrypts the operator key. Each extra serving process
(``composition.processes``) gets a ``RelayedSigner`` with the operator's address and its
end of a pipe; the main process answers on the other end with its own signer
(``SignatureDesk``). The key never leaves the main process: not in a child's environment,
its settings or its memory, so a child's core dump or a read of its memory finds nothing.
A child can still ask for any signature while it runs, as it could sign any transaction
with the key itself; what it cannot do is carry the key away.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

from yieldagent.domain.errors import ChainUnavailable
from yieldagent.domain.ports.signer import SignedTransaction, Signer

log = logging.getLogger(__name__)

_TRANSACTION, _MESSAGE = "transaction", "message"


class RelayedSigner:
    """Signs by asking the process at the other end of ``connection``."""

    def __init__(self, address: str, connection: Connection) -> None:
        self._address = address
        self._connection = connection
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._listening = False

    def __repr__(self) -> str:
        return f"RelayedSigner(address={self._address!r})"

    @property
    def address(self) -> str:
        """The operator's checksummed address."""
        return self._address

    async def sign_transaction(self, tx: Mapping[str, int | str]) -> SignedTransaction:
        """The main process's signature of the EIP-1559 transaction ``tx``."""
        raw, tx_hash = await self._ask(_TRANSACTION, dict(tx))
        return SignedTransaction(bytes(raw), str(tx_hash))

    async def sign_message(self, message: bytes) -> bytes:
        """The main process's EIP-191 (``personal_sign``) signature of ``message``."""
        return bytes(await self._ask(_MESSAGE, bytes(message)))

    async def _ask(self, kind: str, payload: object) -> Any:
        loop = asyncio.get_running_loop()
        if not self._listening:
            loop.add_reader(self._connection.fileno(), self._answered)
            self._listening = True
        request = next(self._ids)
        future: asyncio.Future[Any] = loop.create_future()
        self._waiting[request] = future
        try:
            self._connection.send((request, kind, payload))
        except OSError:
            self._waiting.pop(request, None)
            raise ChainUnavailable("the signer did not answer") from None
        return await future

    def _answered(self) -> None:
        try:
            while self._connection.poll():
                request, signed, value = self._connection.recv()
                future = self._waiting.pop(request, None)
                if future is None or future.done():
                    continue
                if signed:
                    future.set_result(value)
                else:
                    future.set_exception(ChainUnavailable(f"the signer refused: {value}"))
        except (EOFError, OSError):  # the main process is gone
            asyncio.get_running_loop().remove_reader(self._connection.fileno())
            self._listening = False
            waiting, self._waiting = self._waiting, {}
            for future in waiting.values():
                if not future.done():
                    future.set_exception(ChainUnavailable("the signer did not answer"))


class SignatureDesk:
    """In the main process: answers one child's requests with ``signer``."""

    def __init__(self, signer: Signer, connection: Connection) -> None:
        self._signer = signer
        self._connection = connection
        self._tasks: set[asyncio.Task[None]] = set()

    def open(self) -> None:
        """Starts answering, on the running event loop."""
        asyncio.get_running_loop().add_reader(self._connection.fileno(), self._requested)

    def close(self) -> None:
        """Stops answering and closes the main process's end of the pipe."""
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(self._connection.fileno())
        self._connection.close()

    def _requested(self) -> None:
        try:
            while self._connection.poll():
                request, kind, payload = self._connection.recv()
                task = asyncio.get_running_loop().create_task(self._sign(request, kind, payload))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (EOFError, OSError):  # the child is gone
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(self._connection.fileno())

    async def _sign(self, request: int, kind: str, payload: Any) -> None:
        try:
            if kind == _TRANSACTION:
                signed = await self._signer.sign_transaction(payload)
                answer: tuple[int, bool, object] = (request, True, (signed.raw, signed.tx_hash))
            elif kind == _MESSAGE:
                answer = (request, True, await self._signer.sign_message(payload))
            else:
                answer = (request, False, f"unknown request {kind!r}")
        except Exception as error:
            log.warning("relayed signature failed", extra={"error": type(error).__name__})
            answer = (request, False, type(error).__name__)
        with contextlib.suppress(OSError):
            self._connection.send(answer)
