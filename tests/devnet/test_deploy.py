"""deploy_all: the order of the devnet, its optional parts, what the manifest records."""

from __future__ import annotations

import logging

import pytest

from support.devnet import Devnet
from yieldagent.devnet import deploy
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.toolchain import aave_artifact


def test_a_missing_part_is_skipped_with_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="yieldagent.devnet.deploy"):
        assert deploy._optional("no_such_part") is None
    assert "yieldagent.devnet.no_such_part is missing" in caplog.text
    assert deploy._optional("aave") is not None


@pytest.mark.evm
def test_manifest_records_the_parties(devnet: Devnet) -> None:
    d = Deployer(devnet.url)
    manifest = devnet.manifest
    assert manifest.protocols[0].name == "aave"
    assert manifest.extras == {"fee_collector": d.admin, "admin": d.admin}
    assert manifest.borrower == d.actor("aave-borrower")
    debt = d.at(
        aave_artifact("VariableDebtToken"),
        manifest.protocol("aave").contracts["variable_debt_token"],
    )
    assert debt.functions.balanceOf(manifest.borrower).call() > 0
