"""Idempotency keys in the interceptor: a real grpc.aio server over fake servicers.

The fake answers a different response on each execution, so a replay is told from a
second execution by the response itself, and it counts executions.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from sqlalchemy import Engine

from yieldagent.domain.errors import Conflict, InvalidInput, InvalidRequest
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.ports.credentials import Partner
from yieldagent.domain.ports.storage import COMPLETED
from yieldagent.servicers.auth import Authenticator
from yieldagent.servicers.idempotency import Idempotency, current_idempotency_key, fingerprint
from yieldagent.servicers.interceptor import ApiInterceptor
from yieldagent.servicers.method_policy import ERROR_HEADER, STATUS_HEADER, load_policies
from yieldagent.storage.idempotency import IdempotencyStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.v1 import (
    smart_accounts_pb2,
    smart_accounts_pb2_grpc,
    wallets_pb2,
    wallets_pb2_grpc,
)

CREATE = "/yieldagent.v1.SmartAccountService/CreateSmartAccount"
EOA = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
REQUEST = smart_accounts_pb2.CreateSmartAccountRequest(eoa=EOA, chain=8453)
REPLAYED = ("idempotent-replayed", "true")
REST_EDGE = ("x-yieldagent-edge", "rest")


@dataclass
class Fake:
    """What the fake servicers do and saw."""

    calls: int = 0
    keys: list[str | None] = field(default_factory=list)
    gate: asyncio.Event | None = None
    failures: list[BaseException] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    async def execute(self) -> int:
        self.calls += 1
        self.keys.append(current_idempotency_key())
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.failures:
            raise self.failures.pop(0)
        return self.calls


class FakeAccounts(smart_accounts_pb2_grpc.SmartAccountServiceServicer):
    def __init__(self, fake: Fake) -> None:
        self.fake = fake

    async def CreateSmartAccount(
        self, request: smart_accounts_pb2.CreateSmartAccountRequest, context: Any
    ) -> smart_accounts_pb2.CreateSmartAccountResponse:
        number = await self.fake.execute()
        return smart_accounts_pb2.CreateSmartAccountResponse(
            smartAccount=f"0x{number:040x}", backendWallet=request.eoa
        )

    async def GetSmartAccount(
        self, request: smart_accounts_pb2.GetSmartAccountRequest, context: Any
    ) -> smart_accounts_pb2.GetSmartAccountResponse:
        number = await self.fake.execute()
        return smart_accounts_pb2.GetSmartAccountResponse(smartAccount=f"0x{number:040x}")


class FakeWallets(wallets_pb2_grpc.WalletServiceServicer):
    def __init__(self, fake: Fake) -> None:
        self.fake = fake

    async def Withdraw(
        self, request: wallets_pb2.WithdrawRequest, context: Any
    ) -> wallets_pb2.WithdrawResponse:
        number = await self.fake.execute()
        return wallets_pb2.WithdrawResponse(date=str(number))


@dataclass
class Harness:
    fake: Fake
    store: IdempotencyStore
    accounts: smart_accounts_pb2_grpc.SmartAccountServiceStub
    wallets: wallets_pb2_grpc.WalletServiceStub
    credentials: tuple[tuple[str, str], ...]
    partner_id: int

    def keyed(self, key: str, *extra: tuple[str, str]) -> tuple[tuple[str, str], ...]:
        return (*self.credentials, ("idempotency-key", key), *extra)

    async def create(
        self, key: str | None, request: Any = REQUEST, *extra: tuple[str, str]
    ) -> tuple[str, tuple[tuple[str, str], ...]]:
        """The account a call answers, and its initial metadata."""
        metadata = self.credentials if key is None else self.keyed(key, *extra)
        call = self.accounts.CreateSmartAccount(request, metadata=metadata)
        response = await call
        return response.smartAccount, tuple(await call.initial_metadata())


Serve = Callable[..., Any]


@pytest.fixture
def serve(engine: Engine, partner: tuple[Partner, str]) -> Serve:
    """Starts the fake services behind the interceptor, with idempotency tuned for tests."""

    @asynccontextmanager
    async def start(
        wait: float = 2.0, lease: float = 2.0, credentials: tuple[Partner, str] = partner
    ) -> AsyncIterator[Harness]:
        fake = Fake()
        store = IdempotencyStore(engine)
        idempotency = Idempotency(store, wait, lease, poll_seconds=(0.01, 0.05))
        interceptor = ApiInterceptor(
            load_policies(), Authenticator(PartnerStore(engine)), idempotency
        )
        server = grpc.aio.server(interceptors=[interceptor])
        smart_accounts_pb2_grpc.add_SmartAccountServiceServicer_to_server(
            FakeAccounts(fake), server
        )
        wallets_pb2_grpc.add_WalletServiceServicer_to_server(FakeWallets(fake), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        who, api_key = credentials
        assert who.id is not None
        try:
            yield Harness(
                fake,
                store,
                smart_accounts_pb2_grpc.SmartAccountServiceStub(channel),
                wallets_pb2_grpc.WalletServiceStub(channel),
                (("x-partner-name", who.name), ("x-partner-api-key", api_key)),
                who.id,
            )
        finally:
            await channel.close()
            await server.stop(0)

    return start


def _details(error: grpc.aio.AioRpcError) -> dict[str, Any]:
    status = rpc_status.from_call(error)
    assert status is not None
    found: dict[str, Any] = {}
    for packed in status.details:
        for kind in (
            error_details_pb2.ErrorInfo,
            error_details_pb2.BadRequest,
            error_details_pb2.RetryInfo,
        ):
            if packed.Is(kind.DESCRIPTOR):
                message = kind()
                packed.Unpack(message)
                found[kind.DESCRIPTOR.name] = message
    return found


async def _refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call
    return raised.value


async def test_a_retry_replays_the_first_response_without_executing(serve: Serve) -> None:
    async with serve() as api:
        first, first_metadata = await api.create("k1")
        again, again_metadata = await api.create("k1")
        assert again == first == f"0x{1:040x}"
        assert api.fake.calls == 1 and api.fake.keys == ["k1"]
        assert REPLAYED not in first_metadata and REPLAYED in again_metadata
        other, _ = await api.create("k2")
        assert other == f"0x{2:040x}"
        stored = api.store.get(api.partner_id, "k1")
        assert stored is not None and stored.state == COMPLETED
        assert stored.fingerprint == fingerprint(CREATE, REQUEST)
        assert current_idempotency_key() is None


async def test_without_a_key_nothing_changes(serve: Serve) -> None:
    async with serve() as api:
        answers = [await api.create(None) for _ in range(2)]
        assert [account for account, _ in answers] == [f"0x{1:040x}", f"0x{2:040x}"]
        assert all(REPLAYED not in metadata for _, metadata in answers)
        assert api.fake.keys == [None, None]


async def test_methods_not_marked_idempotent_ignore_the_key(serve: Serve) -> None:
    async with serve() as api:
        request = smart_accounts_pb2.GetSmartAccountRequest(eoa=EOA, chain=8453)
        for _ in range(2):
            await api.accounts.GetSmartAccount(request, metadata=api.keyed("read"))
        assert api.fake.calls == 2 and api.fake.keys == [None, None]
        assert api.store.get(api.partner_id, "read") is None


async def test_the_same_key_with_another_request_is_refused(serve: Serve) -> None:
    async with serve() as api:
        await api.create("k1")
        changed = smart_accounts_pb2.CreateSmartAccountRequest(eoa=EOA, chain=8453, agent_id="x")
        error = await _refused(api.accounts.CreateSmartAccount(changed, metadata=api.keyed("k1")))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        [violation] = _details(error)["BadRequest"].field_violations
        assert (violation.field, violation.reason, violation.description) == (
            "header.Idempotency-Key",
            "idempotency_key_reused",
            "This key was already used with a different request",
        )
        assert api.fake.calls == 1


async def test_the_same_key_on_another_method_is_another_request(serve: Serve) -> None:
    async with serve() as api:
        await api.create("k1")
        error = await _refused(
            api.wallets.Withdraw(wallets_pb2.WithdrawRequest(), metadata=api.keyed("k1"))
        )
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert _details(error)["BadRequest"].field_violations[0].reason == (
            "idempotency_key_reused"
        )
        assert api.fake.calls == 1


async def test_a_key_in_progress_with_another_request_is_refused_at_once(serve: Serve) -> None:
    async with serve() as api:
        api.fake.gate = asyncio.Event()
        first = asyncio.ensure_future(api.create("k1"))
        await api.fake.started.wait()
        changed = smart_accounts_pb2.CreateSmartAccountRequest(eoa=EOA, chain=1)
        error = await _refused(api.accounts.CreateSmartAccount(changed, metadata=api.keyed("k1")))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        api.fake.gate.set()
        await first


@pytest.mark.parametrize("key", ["", "k" * 256], ids=["empty", "256 characters"])
async def test_a_malformed_key_is_refused(serve: Serve, key: str) -> None:
    async with serve() as api:
        error = await _refused(api.accounts.CreateSmartAccount(REQUEST, metadata=api.keyed(key)))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        [violation] = _details(error)["BadRequest"].field_violations
        assert (violation.field, violation.reason) == (
            "header.Idempotency-Key",
            "value_error.idempotency_key",
        )
        assert api.fake.calls == 0


async def test_the_longest_key_is_accepted(serve: Serve) -> None:
    async with serve() as api:
        key = "~ !" + "k" * 252
        await api.create(key)
        assert (await api.create(key))[0] == f"0x{1:040x}" and api.fake.keys == [key]


async def test_concurrent_first_calls_execute_once(serve: Serve) -> None:
    async with serve() as api:
        api.fake.gate = asyncio.Event()
        calls = [asyncio.ensure_future(api.create("k1")) for _ in range(10)]
        await api.fake.started.wait()
        await asyncio.sleep(0.2)  # every duplicate has arrived and waits
        api.fake.gate.set()
        answers = await asyncio.gather(*calls)
        assert api.fake.calls == 1
        assert {account for account, _ in answers} == {f"0x{1:040x}"}
        assert sum(REPLAYED in metadata for _, metadata in answers) == 9


async def test_a_retry_waits_for_the_call_in_flight_then_replays(serve: Serve) -> None:
    async with serve(wait=5.0) as api:
        api.fake.gate = asyncio.Event()
        first = asyncio.ensure_future(api.create("k1"))
        await api.fake.started.wait()
        retry = asyncio.ensure_future(api.create("k1"))
        await asyncio.sleep(0.3)
        assert not retry.done()
        api.fake.gate.set()
        assert (await retry)[0] == (await first)[0] == f"0x{1:040x}"
        assert api.fake.calls == 1


async def test_past_the_wait_bound_a_retry_is_aborted_with_a_retry_hint(serve: Serve) -> None:
    async with serve(wait=0.3, lease=5.0) as api:
        api.fake.gate = asyncio.Event()
        first = asyncio.ensure_future(api.create("k1"))
        await api.fake.started.wait()
        started = time.monotonic()
        error = await _refused(api.accounts.CreateSmartAccount(REQUEST, metadata=api.keyed("k1")))
        assert time.monotonic() - started >= 0.3
        assert error.code() == grpc.StatusCode.ABORTED
        details = _details(error)
        assert details["ErrorInfo"].reason == "CONFLICT"
        assert 1 <= details["RetryInfo"].retry_delay.seconds <= 5
        api.fake.gate.set()
        assert (await first)[0] == (await api.create("k1"))[0]
        assert api.fake.calls == 1


@pytest.mark.parametrize(
    ("refusal", "code", "rest_status"),
    [
        (InvalidRequest("Unknown protocol 'x'"), grpc.StatusCode.INVALID_ARGUMENT, "400"),
        (Conflict("Agent not active"), grpc.StatusCode.FAILED_PRECONDITION, "409"),
    ],
    ids=["400", "409"],
)
async def test_a_refusal_is_replayed_as_it_was(
    serve: Serve, refusal: Exception, code: grpc.StatusCode, rest_status: str
) -> None:
    async with serve() as api:
        api.fake.failures.append(refusal)
        first = await _refused(api.accounts.CreateSmartAccount(REQUEST, metadata=api.keyed("k1")))
        again = await _refused(api.accounts.CreateSmartAccount(REQUEST, metadata=api.keyed("k1")))
        assert api.fake.calls == 1
        assert (again.code(), again.details()) == (first.code(), first.details())
        assert first.code() == code and first.details() == str(refusal)
        assert _details(again) == _details(first)
        assert REPLAYED in tuple(again.trailing_metadata() or ())
        # Replayed to the REST edge, with the REST status and body of the refusal.
        rest = await _refused(
            api.accounts.CreateSmartAccount(REQUEST, metadata=api.keyed("k1", REST_EDGE))
        )
        trailing = dict(rest.trailing_metadata() or ())
        assert trailing[STATUS_HEADER] == rest_status
        assert trailing[ERROR_HEADER] == f'{{"detail":"{refusal}"}}'
        assert api.fake.calls == 1


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (RuntimeError("database gone"), grpc.StatusCode.INTERNAL),
        (NotImplementedError(), grpc.StatusCode.UNIMPLEMENTED),
        (
            InvalidInput.field(("eoa",), "value is not a valid address"),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (Conflict("Another operation is in progress", 1), grpc.StatusCode.ABORTED),
    ],
    ids=["500", "501", "422", "passing 409"],
)
async def test_failures_that_began_nothing_are_not_kept(
    serve: Serve, failure: Exception, code: grpc.StatusCode
) -> None:
    async with serve() as api:
        api.fake.failures.append(failure)
        error = await _refused(api.accounts.CreateSmartAccount(REQUEST, metadata=api.keyed("k1")))
        assert error.code() == code
        assert api.store.get(api.partner_id, "k1") is None
        assert (await api.create("k1"))[0] == f"0x{2:040x}"
        assert api.fake.calls == 2


async def test_an_attempt_whose_process_died_is_taken_over(serve: Serve) -> None:
    async with serve() as api:
        api.store.claim(api.partner_id, "k1", CREATE, fingerprint(CREATE, REQUEST), "dead", -1)
        account, metadata = await api.create("k1")
        assert account == f"0x{1:040x}" and REPLAYED not in metadata
        stored = api.store.get(api.partner_id, "k1")
        assert stored is not None and stored.state == COMPLETED and stored.owner != "dead"


async def test_a_retry_takes_over_when_the_lease_lapses_while_it_waits(serve: Serve) -> None:
    async with serve(wait=5.0) as api:
        mark = fingerprint(CREATE, REQUEST)
        api.store.claim(api.partner_id, "k1", CREATE, mark, "dying", 0.4)
        started = time.monotonic()
        account, _ = await api.create("k1")
        assert time.monotonic() - started >= 0.3
        assert account == f"0x{1:040x}" and api.fake.calls == 1


async def test_the_lease_is_renewed_while_the_call_runs(serve: Serve) -> None:
    async with serve(wait=5.0, lease=0.3) as api:
        api.fake.gate = asyncio.Event()
        first = asyncio.ensure_future(api.create("k1"))
        await api.fake.started.wait()
        retry = asyncio.ensure_future(api.create("k1"))
        await asyncio.sleep(1.0)  # three leases long
        api.fake.gate.set()
        assert (await retry)[0] == (await first)[0]
        assert api.fake.calls == 1


async def test_a_cancelled_call_releases_its_key(serve: Serve) -> None:
    async with serve() as api:
        api.fake.gate = asyncio.Event()
        call = api.accounts.CreateSmartAccount(REQUEST, metadata=api.keyed("k1"), timeout=0.3)
        error = await _refused(call)
        assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        for _ in range(100):
            if api.store.get(api.partner_id, "k1") is None:
                break
            await asyncio.sleep(0.02)
        assert api.store.get(api.partner_id, "k1") is None
        api.fake.gate.set()
        assert (await api.create("k1"))[0] == f"0x{2:040x}"


async def test_keys_of_two_partners_do_not_collide(serve: Serve, partners: PartnerStore) -> None:
    other = partners.create("globex", PERMISSIONS)
    async with serve() as acme, serve(credentials=other) as globex:
        mine, _ = await acme.create("shared")
        theirs, metadata = await globex.create("shared")
        assert REPLAYED not in metadata
        assert (mine, theirs) == (f"0x{1:040x}", f"0x{1:040x}")  # each executed its own
        assert acme.fake.calls == globex.fake.calls == 1
