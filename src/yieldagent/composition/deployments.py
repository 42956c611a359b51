"""A chain's deployment manifest: what is deployed where, as one JSON file.

The service reads one for each web3 chain (``YIELDAGENT_DEPLOYMENT_<chain_id>``, by default
the devnet's ``<data dir>/devnet.json``) with ``Manifest.load``, and the composition root
turns it into plain values: the web3 adapter's config (``chain_config``), the catalog's
addresses and the Safe constants (``chains``). ``make devnet`` writes one; for any other
chain ``yieldagent operator deploy-module`` writes its ``safe`` section, and the service
checks it against the chain at start-up (``chains.verify_deployments``). Addresses are
EIP-55 checksummed hex strings.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eth_utils.address import to_checksum_address

from yieldagent.chain.web3.config import CollateralFeedConfig, ProtocolConfig, Web3ChainConfig
from yieldagent.domain.addresses import is_address


@dataclass(frozen=True)
class ProtocolDeployment:
    """One protocol of the devnet, under its catalog name.

    ``address`` is the contract an account supplies to (Aave's Pool, a Comet, an mToken, an
    ERC-4626 vault); ``contracts`` holds what else an adapter needs, by role (``a_token``,
    ``data_provider``, ``rate_strategy``, ``morpho``, ``irm``, ``rewards``, ...); ``markets``
    the Morpho Blue market ids (0x hex) of a vault.
    """

    name: str
    kind: str
    address: str
    contracts: dict[str, str] = field(default_factory=dict)
    markets: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        data = asdict(self)
        data["markets"] = list(self.markets)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProtocolDeployment:
        """The deployment a ``to_dict`` gave."""
        return cls(
            name=str(data["name"]),
            kind=str(data["kind"]),
            address=str(data["address"]),
            contracts={str(k): str(v) for k, v in data.get("contracts", {}).items()},
            markets=tuple(str(m) for m in data.get("markets", ())),
        )


@dataclass(frozen=True)
class SafeDeployment:
    """Safe 1.4.1 and the operator module on one chain (``devnet/safe.py``, or
    ``chain/web3/module_deploy.py`` for a real chain).

    ``factory``, ``singleton`` (``SafeL2``), ``fallback_handler`` and ``multi_send_call_only``
    are Safe's canonical addresses; ``module_setup`` is the contract ``Safe.setup``
    delegatecalls to enable and register the module; ``admin`` and ``operator`` are the
    module's two keys; ``price_feeds`` the feed of each listed token, by token.
    """

    factory: str
    singleton: str
    fallback_handler: str
    multi_send_call_only: str
    module_setup: str
    module: str
    admin: str
    operator: str
    price_feeds: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SafeDeployment:
        """The deployment ``asdict`` gave."""
        feeds = {str(k): str(v) for k, v in data.get("price_feeds", {}).items()}
        fields = ("factory", "singleton", "fallback_handler", "multi_send_call_only")
        return cls(
            **{name: str(data[name]) for name in fields},
            module_setup=str(data["module_setup"]),
            module=str(data["module"]),
            admin=str(data["admin"]),
            operator=str(data["operator"]),
            price_feeds=feeds,
        )


@dataclass(frozen=True)
class Manifest:
    """Everything deployed on one devnet.

    ``deployed_block`` is the block at which the deployment was complete (borrowers
    included): what happens after it is the service's. ``borrower`` is the address of the
    devnet's Aave borrower (each pool's borrower is its own actor). ``safe`` is where Safe
    accounts and their operator module are (None: the service acts for no account there).
    ``collateral_feeds``: the pegged collaterals the pools lend against, each with its price
    feed (Chainlink's ``latestRoundData``) and its peg in the feed's currency, by collateral:
    ``{token: {"feed": address, "peg": "1"}}``.
    """

    chain_id: int
    rpc_url: str
    deployed_block: int
    token: str
    token_symbol: str
    token_decimals: int
    protocols: tuple[ProtocolDeployment, ...]
    reward_token: str | None
    swap_router: str | None
    borrower: str
    extras: dict[str, str] = field(default_factory=dict)
    safe: SafeDeployment | None = None
    collateral_feeds: dict[str, dict[str, str]] = field(default_factory=dict)

    def protocol(self, name: str) -> ProtocolDeployment:
        """The protocol deployed under catalog name ``name``."""
        for deployment in self.protocols:
            if deployment.name == name:
                return deployment
        raise KeyError(f"the devnet has no protocol {name!r}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        data = asdict(self)
        data["protocols"] = [p.to_dict() for p in self.protocols]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        """The manifest a ``to_dict`` gave."""
        return cls(
            chain_id=int(data["chain_id"]),
            rpc_url=str(data["rpc_url"]),
            deployed_block=int(data["deployed_block"]),
            token=str(data["token"]),
            token_symbol=str(data["token_symbol"]),
            token_decimals=int(data["token_decimals"]),
            protocols=tuple(ProtocolDeployment.from_dict(p) for p in data["protocols"]),
            reward_token=None if data.get("reward_token") is None else str(data["reward_token"]),
            swap_router=None if data.get("swap_router") is None else str(data["swap_router"]),
            borrower=str(data["borrower"]),
            extras={str(k): str(v) for k, v in data.get("extras", {}).items()},
            safe=None if data.get("safe") is None else SafeDeployment.from_dict(data["safe"]),
            collateral_feeds={
                str(token): {str(k): str(v) for k, v in feed.items()}
                for token, feed in data.get("collateral_feeds", {}).items()
            },
        )

    def to_json(self) -> str:
        """The manifest as JSON text."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """The manifest ``to_json`` gave."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a devnet manifest is a JSON object")
        return cls.from_dict(data)

    def write(self, path: Path) -> None:
        """Writes the manifest to ``path`` atomically (readers never see half a file)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(self.to_json())
        os.replace(temporary, path)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """The manifest written at ``path``."""
        return cls.from_json(path.read_text())


def chain_config(manifest: Manifest, **overrides: Any) -> Web3ChainConfig:
    """The web3 adapter's config of the chain ``manifest`` describes; ``overrides`` set
    the settings' fields (``confirmations``, ``log_range``, ``safe``, ``collateral_feeds``)."""
    protocols = tuple(
        ProtocolConfig(
            name=p.name,
            kind=p.kind,
            address=to_checksum_address(p.address),
            contracts={k: _maybe_address(v) for k, v in p.contracts.items()},
            markets=tuple(p.markets),
        )
        for p in manifest.protocols
    )
    values: dict[str, Any] = {
        "chain_id": manifest.chain_id,
        "token": to_checksum_address(manifest.token),
        "token_symbol": manifest.token_symbol,
        "token_decimals": manifest.token_decimals,
        "protocols": protocols,
        "reward_token": _address(manifest.reward_token),
        "swap_router": _address(manifest.swap_router),
        "module": _address(manifest.safe.module) if manifest.safe is not None else None,
        "collateral_feeds": tuple(
            CollateralFeedConfig.of(token, feed["feed"], feed["peg"])
            for token, feed in sorted(manifest.collateral_feeds.items())
        ),
    }
    values.update(overrides)
    return Web3ChainConfig(**values)


def _address(value: str | None) -> str | None:
    if not value or int(value, 16) == 0:
        return None
    return to_checksum_address(value)


def _maybe_address(value: str) -> str:
    return to_checksum_address(value) if is_address(value) else value
