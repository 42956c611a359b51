"""Gas per move when the operator's moves of many accounts share one transaction, against
one transaction per move, on a fresh devnet (``python -m benchmarks.batched_execution``;
``BENCH_DEVNET=1 make bench`` runs it after the devnet cycle).

The operator module has no batched entry point, so the batch is measured with the module
as it is: ``contracts/src/testing/CallBatch.sol`` is placed as code at the operator's
address (anvil_setCode) and makes N of the operator's ``execute`` (or ``pay``) calls in one
transaction, each with exactly the call data the adapter sends alone. What a batch saves
is then the transaction's own cost (21,000 gas, the module's and the pools' cold
accounts and slots, once per transaction) shared by N moves; a batched function in the
module would save a few thousand gas more per move (one call into the module instead of
N), and would have to check each account's calls exactly as ``execute`` does.

For each kind of move, ``BENCH_BATCH_SIZE`` (default 10) fresh accounts move one at a
time and as many others in one batch, from the same state: a first supply to Aave, a
first deposit in the Morpho vault, a whole Aave withdrawal, and a payout with its fee.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from eth_account import Account
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from hexbytes import HexBytes
from web3 import HTTPProvider, Web3

from benchmarks.devnet_cycle import AAVE, BASE, MORPHO, OPERATOR_KEY, USDC_UNIT, Service, _on_devnet
from benchmarks.rpc_proxy import RpcProxy
from yieldagent.chain.web3.abis import APPROVE, MODULE_EXECUTE, MODULE_PAY
from yieldagent.chain.web3.adapter import Web3Chain
from yieldagent.composition.deployments import Manifest
from yieldagent.devnet.anvil import rpc
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.toolchain import compile_project
from yieldagent.devnet.usdc import mint
from yieldagent.domain.partners.smart_accounts import AccountKey, open_account
from yieldagent.domain.ports.accounts import Provider, SmartAccount
from yieldagent.domain.ports.chain import ChainKind, Send, TxReceipt
from yieldagent.storage.smart_accounts import SmartAccountStore

AMOUNT = 1_000 * USDC_UNIT
PAYOUT, FEE = 100 * USDC_UNIT, USDC_UNIT


def _emit(**figures: object) -> None:
    print(json.dumps({"benchmark": "batched_execution", **figures}), flush=True)


async def _accounts(service: Service, url: str, label: str, count: int) -> list[SmartAccount]:
    """``count`` Safe accounts deployed with the module, each holding ``AMOUNT``."""
    made = []
    store = SmartAccountStore(service.engine)
    for i in range(count):
        eoa = to_checksum_address(keccak(text=f"bench-batch:{label}:{i}")[12:])
        key = AccountKey(BASE, eoa, "yield-agent")
        account = open_account(store, key, service.partner_id, Provider.SAFE, service.safes)
        await service.chain.prepare_account(account)
        mint(Deployer(url), service.chain.config.token, account.address, AMOUNT)
        made.append(account)
    return made


class Batcher:
    """The operator's address given ``CallBatch``'s code while a batch is sent."""

    def __init__(self, url: str, operator: str) -> None:
        self.w3 = Web3(HTTPProvider(url))
        self.operator = to_checksum_address(operator)
        artifact = compile_project()["CallBatch"]
        self.code = artifact.deployed_bytecode
        self.contract = self.w3.eth.contract(abi=artifact.abi)
        self.payer = to_checksum_address(keccak(text="bench-batch:payer")[12:])
        self.w3.provider.make_request("anvil_setBalance", [self.payer, hex(10**21)])  # type: ignore[arg-type]

    def gas(self, target: str, calls: list[bytes]) -> int:
        """Gas used by one transaction making ``calls`` to ``target`` as the operator."""
        rpc = self.w3.provider.make_request
        rpc("anvil_setCode", [self.operator, self.code])  # type: ignore[arg-type]
        rpc("anvil_impersonateAccount", [self.payer])  # type: ignore[arg-type]
        try:
            data = self.contract.encode_abi("run", [to_checksum_address(target), calls])
            sent = self.w3.eth.send_transaction(
                {"from": self.payer, "to": self.operator, "data": data, "gas": 25_000_000}
            )
            receipt = self.w3.eth.wait_for_transaction_receipt(sent)
        finally:
            rpc("anvil_stopImpersonatingAccount", [self.payer])  # type: ignore[arg-type]
            rpc("anvil_setCode", [self.operator, "0x"])  # type: ignore[arg-type]
        if receipt["status"] != 1:
            raise RuntimeError(f"the batch {receipt['transactionHash'].to_0x_hex()} reverted")
        return int(receipt["gasUsed"])


async def _alone(
    chain: Web3Chain, accounts: list[str], move: Callable[[str], Awaitable[Any]], action: str
) -> list[int]:
    used = []
    for account in accounts:
        await move(account)
        used.append(chain.gas_used[action])
    return used


def _execute_data(calls: list[Any], account: str) -> bytes:
    listed = [(c.target, c.data) for c in calls if c.fn.selector != APPROVE.selector]
    return bytes(MODULE_EXECUTE.encode(to_checksum_address(account), listed))


async def measure(service: Service, url: str, size: int) -> None:
    """The four kinds of move, alone and batched (see the module's docstring)."""
    chain = service.chain
    token = chain.config.token
    module = chain.config.module
    assert module is not None
    batcher = Batcher(url, Account.from_key(OPERATOR_KEY).address)
    singles = await _accounts(service, url, "alone", size)
    alone = [a.address for a in singles]
    together = await _accounts(service, url, "pipelined", size)
    piped = [a.address for a in together]
    made = await _accounts(service, url, "batched", size)
    batched = [a.address for a in made]
    aave, morpho = chain.pools[AAVE], chain.pools[MORPHO]

    def figure(what: str, single: list[int], pipelined: list[int], batch_gas: int) -> None:
        per_move = batch_gas / size
        one_block = mean(pipelined)
        _emit(
            figure="gas_per_move",
            move=what,
            batch_size=size,
            alone=round(mean(single)),
            pipelined_in_one_block=round(one_block),
            batched=round(per_move),
            saved_against_pipelined=round(one_block - per_move),
            saved_percent=round((1 - per_move / one_block) * 100, 1),
        )

    half = AMOUNT // 2
    single = await _alone(chain, alone, lambda a: chain.supply(a, AAVE, token, half), "supply")
    sends = [Send(ChainKind.SUPPLY, a, AAVE, token, half) for a in piped]
    datas = [_execute_data(aave.supply_calls(a, half), a) for a in batched]
    figure(
        "first supply to Aave",
        single,
        await _in_one_block(url, chain, sends),
        batcher.gas(module, datas),
    )

    single = await _alone(chain, alone, lambda a: chain.supply(a, MORPHO, token, half), "supply")
    sends = [Send(ChainKind.SUPPLY, a, MORPHO, token, half) for a in piped]
    datas = [_execute_data(morpho.supply_calls(a, half), a) for a in batched]
    figure(
        "first deposit in the Morpho vault",
        single,
        await _in_one_block(url, chain, sends),
        batcher.gas(module, datas),
    )

    single = await _alone(
        chain, alone, lambda a: chain.withdraw(a, AAVE, token, 0, whole=True), "withdraw"
    )
    sends = [Send(ChainKind.WITHDRAW, a, AAVE, token, 0, whole=True) for a in piped]
    datas = [_execute_data(await aave.exit_calls(a), a) for a in batched]
    figure(
        "whole withdrawal from Aave",
        single,
        await _in_one_block(url, chain, sends),
        batcher.gas(module, datas),
    )

    single = []
    for account in singles:
        await chain.pay(token, account.address, account.eoa, PAYOUT, account.fee_collector, FEE)
        single.append(chain.gas_used["transfer"])
    payouts = [chain.pay(token, a.address, a.eoa, PAYOUT, a.fee_collector, FEE) for a in together]
    datas = [bytes(MODULE_PAY.encode(a, PAYOUT, FEE)) for a in batched]
    figure(
        "payout with its fee",
        single,
        await _paid_in_one_block(url, chain, payouts),
        batcher.gas(module, datas),
    )


async def _in_one_block(url: str, chain: Web3Chain, sends: list[Send]) -> list[int]:
    """Gas of each of ``sends``, sent as the agent's cycle sends a round (pipelined) and
    mined in one block."""
    return await _one_block(url, chain, chain.send_many(sends))


async def _paid_in_one_block(
    url: str, chain: Web3Chain, payouts: Sequence[Awaitable[tuple[TxReceipt, TxReceipt | None]]]
) -> list[int]:
    async def all_paid() -> list[TxReceipt]:
        return [paid for paid, _ in await asyncio.gather(*payouts)]

    return await _one_block(url, chain, all_paid())


async def _one_block(url: str, chain: Web3Chain, work: Awaitable[Sequence[Any]]) -> list[int]:
    """Runs ``work`` with anvil's automine off, mines one block once its transactions are
    all in the pool, and returns each one's gas from its receipt."""
    w3 = Web3(HTTPProvider(url))
    operator = Account.from_key(OPERATOR_KEY).address
    rpc(url, "evm_setAutomine", [False])
    try:
        task = asyncio.ensure_future(work)
        mined = w3.eth.get_transaction_count(operator, "latest")
        while not task.done():
            if w3.eth.get_transaction_count(operator, "pending") - mined >= 1:
                await asyncio.sleep(0.5)  # the rest of the batch, broadcast at once
                rpc(url, "evm_mine", [])
                break
            await asyncio.sleep(0.02)
        receipts = await task
    finally:
        rpc(url, "evm_setAutomine", [True])
    found = [r for r in receipts if isinstance(r, TxReceipt)]
    if len(found) != len(receipts):
        raise RuntimeError(f"a move of the batch failed: {receipts}")
    blocks = {r.block_number for r in found}
    if len(blocks) != 1:
        raise RuntimeError(f"the batch was mined in {len(blocks)} blocks")
    return [int(w3.eth.get_transaction_receipt(HexBytes(r.tx_hash))["gasUsed"]) for r in found]


def main() -> None:
    size = int(os.environ.get("BENCH_BATCH_SIZE", "10"))

    def work(url: str, manifest: Manifest, path: Path, counter: RpcProxy) -> None:
        service = Service.build(url, path, manifest, path.parent / "data")

        async def run() -> None:
            await measure(service, url, size)
            await service.close()

        asyncio.run(run())
        service.engine.dispose()

    _on_devnet(work)


if __name__ == "__main__":
    main()
