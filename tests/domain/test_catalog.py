"""The catalog: chain and token lookups, protocol checks, and parsing the registry."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.catalog import load_catalog
from yieldagent.domain.catalog import Catalog, parse_catalog, relocate
from yieldagent.domain.errors import InvalidRequest, NotFound

SUPPORTED = [1, 137, 8453, 42161, 84532, 11155111]
BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
BASE_PROTOCOLS = ["aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime"]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_chain_ids_are_the_supported_chains_ascending(catalog: Catalog) -> None:
    assert catalog.chain_ids() == SUPPORTED


def test_load_catalog_reads_once() -> None:
    assert load_catalog() is load_catalog()


def test_a_chain_is_found_by_id(catalog: Catalog) -> None:
    base = catalog.chain(8453)
    assert (base.chain_id, base.name) == (8453, "Base")
    assert [t.symbol for t in base.tokens] == ["USDC"]


def test_an_unknown_chain_is_not_found_and_the_supported_ones_are_listed(
    catalog: Catalog,
) -> None:
    with pytest.raises(NotFound) as caught:
        catalog.chain(999)
    assert "999" in caught.value.detail
    assert caught.value.detail.endswith("supported chains: 1, 137, 8453, 42161, 84532, 11155111")


@given(chain_id=st.integers().filter(lambda i: i not in SUPPORTED))
def test_every_other_chain_id_is_not_found(chain_id: int) -> None:
    with pytest.raises(NotFound):
        load_catalog().chain(chain_id)


def test_a_token_is_found_by_its_checksummed_address(catalog: Catalog) -> None:
    token = catalog.token(8453, BASE_USDC)
    assert (token.symbol, token.decimals, token.price_usd) == ("USDC", 6, 1.0)
    assert [p.name for p in token.protocols] == BASE_PROTOCOLS


def test_a_token_lookup_wants_the_checksummed_form(catalog: Catalog) -> None:
    # Callers parse addresses first (parse_address); the lookup itself is exact.
    with pytest.raises(NotFound, match="not supported on chain 8453"):
        catalog.token(8453, BASE_USDC.lower())


def test_a_token_of_another_chain_is_not_found(catalog: Catalog) -> None:
    with pytest.raises(NotFound, match=f"Token {BASE_USDC} is not supported on chain 1"):
        catalog.token(1, BASE_USDC)


def test_a_token_on_an_unknown_chain_reports_the_chain(catalog: Catalog) -> None:
    with pytest.raises(NotFound, match="Chain 999 is not supported"):
        catalog.token(999, BASE_USDC)


def test_token_protocol_lookup(catalog: Catalog) -> None:
    token = catalog.token(8453, BASE_USDC)
    moonwell = token.protocol("moonwell")
    assert moonwell is not None and moonwell.name == "moonwell"
    assert token.protocol("nope") is None


def test_known_protocols_pass_the_check(catalog: Catalog) -> None:
    token = catalog.token(8453, BASE_USDC)
    catalog.check_protocols(token, BASE_PROTOCOLS)
    catalog.check_protocols(token, [])


def test_the_check_names_every_unknown_protocol(catalog: Catalog) -> None:
    token = catalog.token(8453, BASE_USDC)
    with pytest.raises(InvalidRequest) as caught:
        catalog.check_protocols(token, ["aave", "curve", "moonwell", "yearn"])
    detail = caught.value.detail
    assert detail.startswith("Invalid protocol name: curve, yearn;")
    assert detail.endswith(f"protocols for USDC: {', '.join(BASE_PROTOCOLS)}")


def test_a_protocol_of_the_same_token_on_another_chain_is_unknown(catalog: Catalog) -> None:
    polygon_usdc = catalog.chain(137).tokens[0]
    with pytest.raises(InvalidRequest, match="Invalid protocol name: moonwell;"):
        catalog.check_protocols(polygon_usdc, ["aave", "moonwell"])


def _protocol(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "title": name.title(),
        "parent_protocol": name,
        "rate_model": "aave_v3",
        "description": "",
        "link": "https://example.org",
        "address": "0x" + "11" * 20,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    }


def _token(symbol: str, protocols: list[str]) -> dict[str, Any]:
    return {
        "address": "0x" + "22" * 20,
        "symbol": symbol,
        "decimals": "18",
        "price_usd": "2",
        "protocols": [_protocol(name) for name in protocols],
    }


@given(names=st.lists(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), unique=True, max_size=8))
def test_parse_catalog_sorts_protocols_by_name(names: list[str]) -> None:
    catalog = parse_catalog(
        {
            "chains": [
                {"chain_id": "10", "name": "Optimism", "tokens": [_token("DAI", names)]},
            ]
        }
    )
    (token,) = catalog.chain(10).tokens
    assert [p.name for p in token.protocols] == sorted(names)


def test_parse_catalog_sorts_tokens_and_converts_numbers() -> None:
    catalog = parse_catalog(
        {
            "chains": [
                {
                    "chain_id": 10,
                    "name": "Optimism",
                    "tokens": [_token("USDT", ["b", "a"]), _token("DAI", ["c"])],
                },
            ]
        }
    )
    chain = catalog.chain(10)
    assert [t.symbol for t in chain.tokens] == ["DAI", "USDT"]
    assert chain.tokens[0].decimals == 18 and chain.tokens[0].price_usd == 2.0
    assert [p.name for p in chain.tokens[1].protocols] == ["a", "b"]


def test_the_shipped_catalog_lists_protocols_sorted(catalog: Catalog) -> None:
    for chain_id in catalog.chain_ids():
        for token in catalog.chain(chain_id).tokens:
            names = [p.name for p in token.protocols]
            assert names == sorted(names), (chain_id, token.symbol)


def test_a_devnet_relocates_a_chains_token_and_protocols(catalog: Catalog) -> None:
    token, aave = "0x" + "11" * 20, "0x" + "22" * 20
    moved = relocate(catalog, 8453, token, {"aave": aave})
    [usdc] = moved.chain(8453).tokens
    assert (usdc.address, usdc.symbol, usdc.decimals) == (token, "USDC", 6)
    assert [(p.name, p.address) for p in usdc.protocols] == [("aave", aave)]
    assert usdc.protocols[0].title == catalog.token(8453, BASE_USDC).protocol("aave").title  # type: ignore[union-attr]
    assert moved.chain(1) == catalog.chain(1)


def test_relocating_an_unknown_protocol_is_refused(catalog: Catalog) -> None:
    with pytest.raises(InvalidRequest, match="nowhere"):
        relocate(catalog, 8453, "0x" + "11" * 20, {"nowhere": "0x" + "22" * 20})
