"""A plain anvil for tests: on a free port, with its prefunded dev accounts, and test
contracts compiled with the pinned solc-js."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eth_account import Account
from web3 import Web3

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "contracts" / "node_modules"
ANVIL = NODE_MODULES / "@foundry-rs" / "anvil-linux-amd64" / "bin" / "anvil"
SOLC = NODE_MODULES / "solc"

CHAIN_ID = 8453  # the chain id the test anvils run with
DEV_MNEMONIC = "test test test test test test test test test test test junk"
DEV_ACCOUNTS = 12  # anvil funds each with 10,000 ETH


def dev_key(index: int) -> bytes:
    """The private key of anvil's dev account ``index`` (from its default mnemonic)."""
    Account.enable_unaudited_hdwallet_features()
    account = Account.from_mnemonic(DEV_MNEMONIC, account_path=f"m/44'/60'/0'/0/{index}")
    return bytes(account.key)


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True, slots=True)
class Anvil:
    """A running anvil."""

    url: str
    process: subprocess.Popen[bytes]

    def rpc(self, method: str, *params: Any) -> Any:
        """One JSON-RPC call, synchronously; raises on an error answer."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
        request = urllib.request.Request(  # noqa: S310 (the anvil's own http URL)
            self.url, body.encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (http only)
            answer = json.loads(response.read())
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]


@dataclass(frozen=True, slots=True)
class Deployed:
    """A deployed contract: its address and ABI."""

    address: str
    abi: list[Any]

    def calldata(self, function: str, *args: Any) -> str:
        """The ABI-encoded call of ``function`` with ``args``."""
        contract = Web3().eth.contract(address=Web3.to_checksum_address(self.address), abi=self.abi)
        return str(contract.encode_abi(function, list(args)))


@contextmanager
def running_anvil(chain_id: int = CHAIN_ID, *options: str) -> Iterator[Anvil]:
    """Starts anvil on a free port (its own process, stopped at the end)."""
    port = free_port()
    process = subprocess.Popen(
        [
            str(ANVIL),
            *("--host", "127.0.0.1", "--port", str(port), "--chain-id", str(chain_id)),
            *("--accounts", str(DEV_ACCOUNTS), "--silent", *options),
        ],
    )
    anvil = Anvil(f"http://127.0.0.1:{port}", process)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                anvil.rpc("eth_chainId")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("anvil did not start") from None
                time.sleep(0.05)
        yield anvil
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


_COMPILE = """
const solc = require(process.argv[1]);
let input = '';
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => { process.stdout.write(solc.compile(input)); });
"""


def compile_contract(source: Path, name: str) -> tuple[list[Any], str]:
    """The ABI and creation bytecode (0x hex) of contract ``name`` in ``source``."""
    standard = {
        "language": "Solidity",
        "sources": {source.name: {"content": source.read_text()}},
        "settings": {
            "evmVersion": "paris",  # solc 0.8.19 knows nothing later,
            "optimizer": {"enabled": True, "runs": 200},
            "outputSelection": {"*": {"*": ["abi", "evm.bytecode.object"]}},
        },
    }
    done = subprocess.run(
        ["node", "-e", _COMPILE, str(SOLC)],
        input=json.dumps(standard),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    output = json.loads(done.stdout)
    errors = [e for e in output.get("errors", []) if e["severity"] == "error"]
    if errors:
        raise RuntimeError("\n".join(e["formattedMessage"] for e in errors))
    compiled = output["contracts"][source.name][name]
    return compiled["abi"], "0x" + compiled["evm"]["bytecode"]["object"]
