"""``yieldagent operator deploy-module`` writes a manifest the service starts on, and the
service refuses a manifest whose contracts the chain does not hold as this project builds
them, naming each difference: the mistaken operator's and the intruder's manifests."""

from __future__ import annotations

import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from eth_utils.address import to_checksum_address

from support.anvil import dev_key
from support.devnet import Devnet
from support.devnet_service import OPERATOR_KEY
from yieldagent.chain.web3.module_code import shipped_code
from yieldagent.chain.web3.module_listing import operator_change, selector
from yieldagent.chain.web3.reader import RpcReader
from yieldagent.cli import main
from yieldagent.composition.chains import verify_deployments
from yieldagent.composition.compose import Service
from yieldagent.composition.deployments import Manifest
from yieldagent.config import load_settings
from yieldagent.devnet.safe import TIMELOCK_DELAY
from yieldagent.devnet.toolchain import compile_project
from yieldagent.domain.errors import ConfigurationError

pytestmark = pytest.mark.evm

DEPLOYER = 9  # anvil's account that deploys (and first administers) the module
OPERATOR = Account.from_key(OPERATOR_KEY).address


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """The command's exit code and JSON answer; in a thread of its own, as the tests that
    start the service run an event loop."""
    # The service drops the operator key from the environment once read; each command here
    # is a process of its own in production, so each finds the key set.
    os.environ["YIELDAGENT_OPERATOR_PRIVATE_KEY"] = OPERATOR_KEY
    with ThreadPoolExecutor(1) as pool:
        code = pool.submit(main, list(argv)).result()
    out, err = capsys.readouterr()
    return code, json.loads(out if code == 0 else err)


@pytest.fixture
def env(net: Devnet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The settings of a service on the devnet whose manifest names no module yet."""
    bare = tmp_path / "protocols.json"
    replace(net.manifest, safe=None).write(bare)
    values = {
        "YIELDAGENT_DATA_DIR": str(tmp_path / "data"),
        # The devnet named as such: anvil's published keys are refused anywhere else.
        "YIELDAGENT_ENV": "devnet",
        "YIELDAGENT_RPC_URL_8453": net.url,
        "YIELDAGENT_DEPLOYMENT_8453": str(tmp_path / "deployment.json"),
        "YIELDAGENT_OPERATOR_PRIVATE_KEY": OPERATOR_KEY,
        "YIELDAGENT_FEE_COLLECTOR": net.manifest.extras["fee_collector"],
        "YIELDAGENT_METRICS_PORT": "0",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    key = tmp_path / "deployer.key"
    key.write_text("0x" + dev_key(DEPLOYER).hex())
    os.chmod(key, 0o600)
    return values


def _deploy(
    net: Devnet, capsys: pytest.CaptureFixture[str], env: dict[str, str], *extra: str
) -> dict[str, Any]:
    assert net.manifest.safe is not None
    data = Path(env["YIELDAGENT_DEPLOYMENT_8453"]).parent
    feeds = [f"--feed={t}={f}" for t, f in net.manifest.safe.price_feeds.items()]
    deployer = Account.from_key(dev_key(DEPLOYER)).address
    argv = [
        "operator",
        "deploy-module",
        "--chain",
        "8453",
        "--key-file",
        str(data / "deployer.key"),
    ]
    argv += ["--manifest", str(data / "protocols.json"), "--out", env["YIELDAGENT_DEPLOYMENT_8453"]]
    code, printed = _run(capsys, *argv, "--admin", deployer, *feeds, *extra)
    assert code == 0, printed
    return printed


async def _problems(env: dict[str, str]) -> list[str]:
    """What the start-up check names (empty: the service may start)."""
    try:
        await verify_deployments(load_settings(env), OPERATOR)
    except ConfigurationError as refused:
        return str(refused).split("\n")[1:]
    return []


def _tampered(env: dict[str, str], **safe: Any) -> None:
    path = Path(env["YIELDAGENT_DEPLOYMENT_8453"])
    manifest = Manifest.load(path)
    assert manifest.safe is not None
    replace(manifest, safe=replace(manifest.safe, **safe)).write(path)


async def test_the_service_starts_on_the_manifest_the_tool_writes(
    net: Devnet,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    printed = _deploy(net, capsys, env)
    assert printed["problems"] == [] and printed["pending_admin"] is None
    assert len(printed["transactions"]) > 10  # the module, its listing, the seal
    manifest = Manifest.load(Path(env["YIELDAGENT_DEPLOYMENT_8453"]))
    assert manifest.safe is not None and manifest.safe.module == printed["module"]
    assert manifest.safe.operator == OPERATOR and manifest.protocols == net.manifest.protocols
    module = net.d.at(compile_project()["OperatorModule"], printed["module"])
    assert module.functions.isSealed().call() and module.functions.operator().call() == OPERATOR
    assert module.functions.delay().call() == TIMELOCK_DELAY
    # What the service lists is what the devnet's own module lists, rule for rule.
    assert net.manifest.safe is not None
    devnet_module = net.d.at(compile_project()["OperatorModule"], net.manifest.safe.module)
    for protocol in net.manifest.protocols:
        for fn in ("withdraw(address,uint256,address)", "redeem(uint256)", "mint(uint256)"):
            target, chosen = to_checksum_address(protocol.address), selector(fn)
            assert (
                module.functions.rules(target, chosen).call()
                == devnet_module.functions.rules(target, chosen).call()
            )
    # Again: nothing left to do, nothing sent.
    assert _deploy(net, capsys, env)["transactions"] == []

    # The whole check is one JSON-RPC batch: one round trip per chain.
    batches: list[int] = []
    send = RpcReader._send

    async def counted(reader: RpcReader, batch: list[Any]) -> list[dict[str, Any]]:
        batches.append(len(batch))
        return await send(reader, batch)

    with monkeypatch.context() as patched:
        patched.setattr(RpcReader, "_send", counted)
        assert await _problems(env) == []
    assert batches == [14]  # chain id, six codes, seven views

    service = Service(load_settings(env), with_edge=False)
    try:
        await service.start()
    finally:
        await service.stop()


async def test_a_start_on_a_manifest_naming_other_code_is_refused_naming_it(
    net: Devnet, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> None:
    printed = _deploy(net, capsys, env)
    _tampered(env, module=printed["module_setup"], singleton=printed["module"])
    service = Service(load_settings(env), with_edge=False)
    with pytest.raises(ConfigurationError) as refused:
        await service.start()
    await service.stop()
    assert str(refused.value).split("\n")[1:] == [
        f"chain 8453: module: the code at {printed['module_setup']} is not the "
        "OperatorModule this release builds",
        f"chain 8453: singleton: the code at {printed['module']} is not Safe 1.4.1's SafeL2",
    ]
    # Refused before the database is opened: nothing was written.
    assert await asyncio.to_thread(os.listdir, env["YIELDAGENT_DATA_DIR"]) == []


async def test_each_contract_with_other_code_is_named(
    net: Devnet, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> None:
    printed = _deploy(net, capsys, env)
    other = printed["module"]
    _tampered(
        env,
        module_setup=other,
        factory=other,
        fallback_handler=other,
        multi_send_call_only="0x" + "12" * 20,
    )
    assert await _problems(env) == [
        f"chain 8453: module_setup: the code at {other} is not the OperatorModuleSetup "
        "this release builds",
        f"chain 8453: factory: the code at {other} is not Safe 1.4.1's SafeProxyFactory",
        f"chain 8453: fallback_handler: the code at {other} is not Safe 1.4.1's "
        "CompatibilityFallbackHandler",
        f"chain 8453: multi_send_call_only: no contract at 0x{'12' * 20}",
    ]


def _module(net: Devnet, admin: str, delay: int, fee: int, slippage: int) -> str:
    """A module deployed by its constructor, its operator set, left unsealed."""
    d = net.d
    module = d.deploy(compile_project()["OperatorModule"], admin, delay, fee, slippage)
    d.transact(module.functions.applyChange(operator_change(OPERATOR)), sender=admin)
    return str(module.address)


async def test_an_unsealed_module_and_loose_bounds_are_refused_naming_them(
    net: Devnet, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> None:
    _deploy(net, capsys, env)
    admin = net.d.accounts[8]
    # The contract admits a fee up to 20% and a slippage up to 5%: the README states 10%, 1%.
    module = _module(net, admin, TIMELOCK_DELAY, 2_000, 500)
    _tampered(env, module=module, admin=admin)
    assert await _problems(env) == [
        f"chain 8453: module: {module} is not sealed: its admin can still list anything at once",
        "chain 8453: module: maxFeeBps is 2000, above 1000 (10% of a payout)",
        "chain 8453: module: maxSlippageBps is 500, above 100 (1% of a swap)",
    ]


async def test_a_module_with_a_short_delay_is_refused(
    net: Devnet, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> None:
    """The constructor refuses less than 48 hours; the same code with a shorter delay
    written into it (all anvil_setCode can forge) is refused at start-up."""
    module = _deploy(net, capsys, env)["module"]
    code = bytearray(net.w3.eth.get_code(module))
    patched = 0
    for start, length in shipped_code().module.immutables:
        if int.from_bytes(code[start : start + length], "big") == TIMELOCK_DELAY:
            code[start : start + length] = (3600).to_bytes(length, "big")
            patched += 1
    assert patched > 0
    net.d.anvil("anvil_setCode", module, "0x" + code.hex())
    assert await _problems(env) == [
        "chain 8453: module: delay is 3600 s, below 172800 s (48 hours)"
    ]


async def test_an_admin_that_is_the_operator_is_refused(
    net: Devnet, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> None:
    """No call of the module makes them one (both orders are refused on chain); a state
    written behind its back is still refused."""
    module = _deploy(net, capsys, env)["module"]
    slot_0 = "0x" + "00" * 12 + OPERATOR[2:].lower()  # admin is the module's first slot
    net.d.anvil("anvil_setStorageAt", module, "0x0", slot_0)
    problems = await _problems(env)
    assert problems == [f"chain 8453: admin: the module's admin {OPERATOR} is the operator key"]


async def test_a_module_acting_for_another_operator_is_refused(
    net: Devnet, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> None:
    other = net.d.accounts[7]
    printed = _deploy(net, capsys, env, "--operator", other)
    assert printed["problems"] == [] and printed["operator"] == other  # as it was asked
    assert await _problems(env) == [
        f"chain 8453: operator: the module lets {other} act, not this service's key {OPERATOR}"
    ]


async def test_a_handover_to_a_multisig_starts_once_it_is_accepted(
    net: Devnet, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> None:
    multisig = net.d.accounts[8]
    data = Path(env["YIELDAGENT_DEPLOYMENT_8453"]).parent
    assert net.manifest.safe is not None
    feeds = [f"--feed={t}={f}" for t, f in net.manifest.safe.price_feeds.items()]
    argv = ["operator", "deploy-module", "--key-file", str(data / "deployer.key")]
    argv += ["--manifest", str(data / "protocols.json"), "--admin", multisig, *feeds]
    code, printed = _run(capsys, *argv)
    assert code == 0 and printed["pending_admin"] == multisig
    deployer = Account.from_key(dev_key(DEPLOYER)).address
    assert printed["problems"] == [
        f"admin: the module's admin is {deployer}, not the manifest's {multisig} "
        f"({multisig} must call acceptAdmin)"
    ]
    module = net.d.at(compile_project()["OperatorModule"], printed["module"])
    net.d.transact(module.functions.acceptAdmin(), sender=multisig)
    assert await _problems(env) == []


def test_the_tool_refuses_an_operator_that_would_administer_the_module(
    net: Devnet, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> None:
    data = Path(env["YIELDAGENT_DEPLOYMENT_8453"]).parent
    argv = ["operator", "deploy-module", "--key-file", str(data / "deployer.key")]
    argv += ["--manifest", str(data / "protocols.json"), "--admin", OPERATOR]
    code, error = _run(capsys, *argv)
    assert code == 1 and error["error"] == "the module cannot be deployed:"
    assert error["problems"] == [
        "the operator key must be neither the admin nor the deploying key",
        f"no price feed for the base token {net.manifest.token} (--feed TOKEN=FEED)",
    ]
    os.chmod(data / "deployer.key", 0o644)
    code, error = _run(capsys, *argv)
    assert code == 1 and "readable by others" in error["error"]
