"""The webhook tests' receiver (on 127.0.0.1) and sealing box."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.webhook_receiver import Receiver
from yieldagent.webhooks.sealing import SecretBox, load_box


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.release()
    started.stop()


@pytest.fixture
def box(tmp_path: Path) -> SecretBox:
    return load_box(None, tmp_path)
