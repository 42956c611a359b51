"""Sanity checks on the shipped catalog data file ``yieldagent/catalog/registry.json``."""

import json
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import pytest
from eth_utils.address import is_checksum_address

CHAIN_IDS = {1, 137, 8453, 42161, 84532, 11155111}
RATE_MODELS = {"aave_v3", "compound_v3", "morpho_blue", "moonwell"}


@pytest.fixture(scope="module")
def registry() -> dict[str, Any]:
    text = files("yieldagent.catalog").joinpath("registry.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _tokens(registry: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for chain in registry["chains"]:
        yield from chain["tokens"]


def test_exactly_the_supported_chains(registry: dict[str, Any]) -> None:
    ids = [chain["chain_id"] for chain in registry["chains"]]
    assert len(ids) == len(set(ids))
    assert set(ids) == CHAIN_IDS


def test_every_address_is_checksummed(registry: dict[str, Any]) -> None:
    for token in _tokens(registry):
        assert is_checksum_address(token["address"]), token["address"]
        for protocol in token["protocols"]:
            assert is_checksum_address(protocol["address"]), protocol["address"]


def test_every_token_has_a_protocol(registry: dict[str, Any]) -> None:
    for token in _tokens(registry):
        assert token["protocols"], token["address"]


def test_protocol_names_unique_per_token(registry: dict[str, Any]) -> None:
    for token in _tokens(registry):
        names = [protocol["name"] for protocol in token["protocols"]]
        assert len(names) == len(set(names)), token["address"]


def test_rate_models_are_known(registry: dict[str, Any]) -> None:
    for token in _tokens(registry):
        for protocol in token["protocols"]:
            assert protocol["rate_model"] in RATE_MODELS, protocol["name"]
