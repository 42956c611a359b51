"""Where Safe accounts can be created: each chain's constants, or why not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from yieldagent.catalog import load_catalog
from yieldagent.composition.chains import SIMULATED_FEE_COLLECTOR, SIMULATED_MODULE, safe_chains
from yieldagent.composition.deployments import Manifest, SafeDeployment
from yieldagent.config import Settings, load_settings
from yieldagent.domain.errors import ChainUnavailable

OPERATOR = "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65"
COLLECTOR = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"
SAFE = SafeDeployment(
    factory="0x4e1DCf7AD4e460CfD30791CCC4F9c8a4f820ec67",
    singleton="0x29fcB43b46531BcA003ddC8FCB67FFE91900C762",
    fallback_handler="0xfd0732Dc9E303f09fCEf3a7388Ad10A83459Ec99",
    multi_send_call_only="0x9641d764fc13c8B624c04430C7356C1C7C8102e2",
    module_setup="0x725308040b4D93A52534154de2a655e172B7A373",
    module="0x8E58092bfCB6a88B7BE89ADCeCF0CE3065ccDeF8",
    admin="0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    operator=OPERATOR,
)


def _manifest(path: Path, safe: SafeDeployment | None) -> Path:
    Manifest(
        chain_id=8453,
        rpc_url="http://127.0.0.1:1",
        deployed_block=1,
        token="0x5FbDB2315678afecb367f032d93F642f64180aa3",
        token_symbol="USDC",
        token_decimals=6,
        protocols=(),
        reward_token=None,
        swap_router=None,
        borrower=OPERATOR,
        safe=safe,
    ).write(path)
    return path


def _settings(tmp_path: Path, safe: SafeDeployment | None = SAFE, **env: str) -> Settings:
    manifest = _manifest(tmp_path / "deployment.json", safe)
    return load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_RPC_URL_8453": "http://127.0.0.1:1",
            "YIELDAGENT_DEPLOYMENT_8453": str(manifest),
            **env,
        }
    )


def test_a_web3_chain_takes_its_manifests_module_and_the_configured_collector(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path, YIELDAGENT_FEE_COLLECTOR=COLLECTOR)
    safes = safe_chains(settings, load_catalog(), OPERATOR)
    base = safes.on(8453)
    assert (base.module, base.module_setup, base.fee_collector) == (
        SAFE.module,
        SAFE.module_setup,
        COLLECTOR,
    )
    assert base.token == "0x5FbDB2315678afecb367f032d93F642f64180aa3"
    assert safes.on(1).module == SIMULATED_MODULE  # the other chains stay simulated
    assert safes.on(1).fee_collector == COLLECTOR


@pytest.mark.parametrize(
    ("env", "safe", "why"),
    [
        ({}, SAFE, "YIELDAGENT_FEE_COLLECTOR is not set"),
        ({"YIELDAGENT_FEE_COLLECTOR": OPERATOR}, SAFE, "is the operator's address"),
        ({"YIELDAGENT_FEE_COLLECTOR": COLLECTOR}, None, "names no Safe operator module"),
        (
            {"YIELDAGENT_FEE_COLLECTOR": COLLECTOR},
            replace(SAFE, operator=COLLECTOR),
            "not this service's operator",
        ),
    ],
)
def test_a_web3_chain_is_refused_without_a_collector_apart_from_the_operator(
    tmp_path: Path, env: dict[str, str], safe: SafeDeployment | None, why: str
) -> None:
    settings = _settings(tmp_path, safe, **env)
    safes = safe_chains(settings, load_catalog(), OPERATOR)
    with pytest.raises(ChainUnavailable, match=why):
        safes.on(8453)


def test_a_simulated_chain_has_a_simulated_collector_unless_one_is_set(tmp_path: Path) -> None:
    settings = load_settings({"YIELDAGENT_DATA_DIR": str(tmp_path)})
    safes = safe_chains(settings, load_catalog(), OPERATOR)
    assert safes.on(8453).fee_collector == SIMULATED_FEE_COLLECTOR
    assert SIMULATED_FEE_COLLECTOR != OPERATOR
