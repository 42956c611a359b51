"""The devnet-contracts tests share the session's devnet and undo what each test did."""

from __future__ import annotations

import pytest

from support.devnet import Devnet


@pytest.fixture
def net(devnet_snapshot: Devnet) -> Devnet:
    """The session's devnet (``deploy_all``: borrowers included), reverted after the test."""
    return devnet_snapshot
