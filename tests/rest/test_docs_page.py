"""The docs page, opened in real headless Chromium, lists every operation of the document."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from google.api import annotations_pb2

from support.service import RunningService
from yieldagent.servicers.method_policy import api_services

# The browser's own flags for a quiet, offline, throwaway run.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Virtual time runs the page's scripts and its fetch of the document to completion.
    "--virtual-time-budget=30000",
    "--dump-dom",
]


def _rendered(url: str, profile: Path) -> str:
    """The page's DOM after its scripts ran, as Chromium prints it."""
    chromium = shutil.which("chromium")
    assert chromium is not None, "chromium is missing: `make test` installs it (apt)"
    done = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", url],
        capture_output=True,
        timeout=100,
        check=True,
    )
    return html.unescape(done.stdout.decode())


def _operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for verbs in document["paths"].values() for op in verbs.values()]


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)  # the backend plays no part
def test_the_docs_page_lists_every_operation(api: RunningService, tmp_path: Path) -> None:
    document = api.request("GET", "/api/v1/openapi.json").json()
    dom = _rendered(f"http://127.0.0.1:{api.http_port}/api/v1/docs", tmp_path / "profile")

    # Redoc gives each operation a section "tag/<service>/operation/<operationId>".
    sections = set(re.findall(r'id="tag/[^"/]+/operation/([^"/]+)"', dom))
    operations = _operations(document)
    routed = [
        m
        for s in api_services()
        for m in s.methods
        if m.GetOptions().HasExtension(annotations_pb2.http)
    ]
    assert len(operations) == len(routed)
    assert sections == {op["operationId"] for op in operations}
    for operation in operations:
        assert operation["summary"] in dom, operation["operationId"]


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_the_page_and_its_script_are_served_by_the_edge_without_credentials(
    api: RunningService,
) -> None:
    page = api.request("GET", "/api/v1/docs")
    assert page.status == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    script = re.search(rb'<script src="([^"]+)"', page.body)
    assert script is not None
    # The page's relative links resolve under /api/v1/: no CDN.
    bundle = api.request("GET", "/api/v1/" + script.group(1).decode())
    assert bundle.status == 200
    assert bundle.headers["content-type"].startswith("text/javascript")
    assert b"Redoc" in bundle.body[:1_000_000]
    assert b'spec-url="openapi.json"' in page.body
    assert json.loads(api.request("GET", "/api/v1/openapi.json").body)["openapi"] == "3.1.0"
