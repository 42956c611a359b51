"""The ``yieldagent`` command: run the service, migrate, and operator tasks.

    yieldagent run                         the whole service: gRPC, worker and Envoy
    yieldagent serve                       the same without Envoy
    yieldagent migrate                     apply database migrations
    yieldagent partner create NAME         register a partner; prints its API key once
    yieldagent partner rotate NAME [--grace SECONDS]
                                           issue a new key; the old one stops working
                                           at once, or after the grace period
    yieldagent partner disable NAME        deactivate a partner (403 on keyed calls)
    yieldagent partner enable NAME         reactivate a partner
    yieldagent partner webhook NAME --url URL
                                           post the partner's wallet events to URL; prints
                                           the new signing secret once
    yieldagent partner deliveries NAME [--limit N]
                                           the partner's webhook delivery log, newest first
    yieldagent sim advance --seconds N     move simulated time ahead, accruing everything
    yieldagent sim deposit --chain C --token T --from EOA --to ADDRESS --amount N
                                           a user's ERC-20 transfer on the simulated chain
    yieldagent sim pause|unpause --chain C --protocol P --what supply|withdraw|all
                                           switch a simulated pool's supply or withdrawals
    yieldagent sim drain --chain C --protocol P --fraction F
                                           other suppliers withdraw F of the pool's supply
    yieldagent sim loss --chain C --protocol P --fraction F
                                           the pool loses F of its assets to bad debt
    yieldagent sim price --chain C --token SYMBOL --usd X
                                           set a simulated price feed (a collateral's)
    yieldagent sim sequencer --chain C --status down|up
                                           take the chain's L2 sequencer down, or back up
    yieldagent devnet deposit --chain C --token T --from EOA --to ADDRESS --amount N
                                           a user's ERC-20 transfer on the devnet (minted
                                           to EOA first if it lacks the amount)
    yieldagent devnet advance --seconds N [--chain C]
                                           move the devnet's time ahead and mine a block
    yieldagent devnet price --token T --usd X [--chain C]
                                           a pegged collateral's price feed answers X
                                           (the manifest's collateral_feeds): a depeg
    yieldagent protocol pause|resume NAME [--chain C] [--now]
                                           mark a protocol unsafe: agents leave it at their
                                           next run, or at once with --now
    yieldagent protocol risk [--chain C]   every pool's state under the risk guards
    yieldagent protocol clear NAME --chain C
                                           lift the exclusion a loss put on a protocol
    yieldagent agent cycle                 recover interrupted runs, then run every due
                                           wallet once (as the worker does each tick)
    yieldagent wallet block|unblock|emergency|resume ADDRESS [--chain C]
                                           operator actions on a wallet (emergency moves
                                           every position out and keeps the funds idle)
    yieldagent operator create-key         create the operator keystore under the data dir,
                                           encrypted with YIELDAGENT_OPERATOR_KEY_PASSWORD
    yieldagent operator address            the operator's address (the backend wallet)
    yieldagent operator deploy-module --chain C --key-file F --admin A [--feed T=FEED ...]
                                           deploy, list and seal the operator module on
                                           chain C (its YIELDAGENT_RPC_URL_<chain_id>) and write
                                           its manifest (--out, default: the chain's own)

Output is JSON on stdout; errors are JSON on stderr with a non-zero exit code. The
commands and their parser stay in this one module, past the usual length, so that one
file shows the whole command line.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from eth_utils.address import to_checksum_address
from sqlalchemy import Engine

from yieldagent.catalog import load_catalog
from yieldagent.chain.operator import create_keystore, load_operator_wallet
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.simulated.risk import WHAT, Scenarios
from yieldagent.composition import runtime
from yieldagent.composition.chains import build_chains, served_catalog, simulated_market
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.composition.compose import (
    build_agent,
    build_lifecycle,
    destination_policy,
    run_service,
)
from yieldagent.composition.deployments import Manifest, SafeDeployment
from yieldagent.config import (
    DEV_KEY_PASSWORD,
    Settings,
    load_settings,
    logged_secrets,
    weak_password,
)
from yieldagent.domain.addresses import is_address, parse_address
from yieldagent.domain.books.effects import disagreeing_chains, rebuild_totals
from yieldagent.domain.dates import iso
from yieldagent.domain.errors import (
    ChainUnavailable,
    ConfigurationError,
    FieldViolation,
    InvalidInput,
    InvalidRequest,
    YieldAgentError,
)
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.partners.safe_accounts import (
    COMPATIBILITY_FALLBACK_HANDLER_1_4_1,
    MULTI_SEND_CALL_ONLY_1_4_1,
    SAFE_L2_1_4_1,
    SAFE_PROXY_FACTORY_1_4_1,
)
from yieldagent.domain.ports.credentials import Partner
from yieldagent.observability.logs import configure_logging
from yieldagent.simulated_world.state import MarketError
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.operations import OperationStore, operation_json
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore
from yieldagent.storage.webhooks import WebhookStore
from yieldagent.webhooks.admin import delivery_log, set_webhook
from yieldagent.webhooks.sealing import load_box

T = TypeVar("T")


def _print(payload: dict[str, Any]) -> None:
    print(json.dumps(payload))


def _partners(settings: Settings) -> PartnerStore:
    engine = create_db_engine(settings.database_url)
    migrate(engine)
    return PartnerStore(engine)


def _partner_json(partner: Partner) -> dict[str, Any]:
    return {
        "name": partner.name,
        "active": partner.active,
        "permissions": sorted(partner.permissions),
    }


def _cmd_run(settings: Settings, args: argparse.Namespace) -> None:
    runtime.run(run_service(settings, with_edge=args.command == "run"), settings.event_loop)


def _cmd_migrate(settings: Settings, args: argparse.Namespace) -> None:
    migrate(create_db_engine(settings.database_url))
    _print({"migrated": True})


def _cmd_totals(settings: Settings, args: argparse.Namespace) -> None:
    engine = create_db_engine(settings.database_url)
    migrate(engine)
    wallets = WalletStore(engine)
    if args.action == "rebuild":
        rebuild_totals(wallets)
        _print({"rebuilt": True})
        return
    disagreeing = disagreeing_chains(wallets)
    _print({"consistent": not disagreeing, "chains": disagreeing})


def _cmd_webhooks(settings: Settings, args: argparse.Namespace) -> None:
    engine = create_db_engine(settings.database_url)
    migrate(engine)
    store = WebhookStore(engine)
    if args.action == "webhook":
        box = load_box(settings.webhook_secret_key, settings.data_dir)
        _print(set_webhook(store, box, args.name, args.url, destination_policy(settings)))
    else:
        _print(delivery_log(store, args.name, args.limit))


def _seconds(text: str) -> float:
    """A non-negative number of seconds (an argparse type)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"seconds must be 0 or more, got {text!r}")
    return seconds


def _cmd_partner(settings: Settings, args: argparse.Namespace) -> None:
    if args.action in ("webhook", "deliveries"):
        return _cmd_webhooks(settings, args)
    store = _partners(settings)
    if args.action == "create":
        permissions = frozenset(p for p in args.permissions.split(",") if p)
        partner, key = store.create(args.name, permissions)
        _print({"name": partner.name, "api_key": key})
    elif args.action == "rotate":
        partner, key = store.rotate(args.name, args.grace)
        _print({"name": partner.name, "api_key": key})
    elif args.action == "disable":
        _print(_partner_json(store.disable(args.name)))
    else:
        _print(_partner_json(store.enable(args.name)))


def _market(settings: Settings) -> SimulatedMarket:
    engine = create_db_engine(settings.database_url)
    migrate(engine)
    return simulated_market(settings, engine, load_catalog(), set_speed=False)


def _cmd_sim(settings: Settings, args: argparse.Namespace) -> None:
    if args.action in _SCENARIOS:
        _sim_scenario(settings, args)
        return
    if args.action == "advance":
        if args.seconds < 0:
            raise InvalidInput.field(("seconds",), "must not be negative")
        _print({"time": iso(datetime.fromtimestamp(_market(settings).advance(args.seconds), UTC))})
        return
    if args.action == "balance":
        _sim_balance(settings, args)
        return
    catalog = load_catalog()
    violations = _transfer_violations(args)
    if args.chain not in catalog.chains:
        violations.insert(0, FieldViolation(("chain",), "unsupported chain", "value_error"))
    if violations:
        raise InvalidInput(violations)
    token = catalog.token(args.chain, parse_address(args.token, ("token",)))
    transfer = _market(settings).deposit_from(
        args.chain,
        token.address,
        parse_address(args.sender, ("from",)),
        parse_address(args.to, ("to",)),
        args.amount,
    )
    _print({"tx_hash": transfer.tx_hash, "block_number": transfer.block_number})


_SCENARIOS = ("pause", "unpause", "drain", "loss", "price", "sequencer")


def _sim_scenario(settings: Settings, args: argparse.Namespace) -> None:
    """A scenario on the simulated market (``chain.simulated.risk``), printed as JSON."""
    if args.chain not in load_catalog().chains:
        raise InvalidInput.field(("chain",), "unsupported chain")
    scenarios = Scenarios(_market(settings))
    chain = args.chain
    if args.action == "price":
        done = scenarios.price(chain, args.token, args.usd)
    elif args.action == "sequencer":
        done = scenarios.sequencer(chain, args.status == "up")
    elif args.action in ("pause", "unpause"):
        done = scenarios.pause(chain, args.protocol, args.what, args.action == "pause")
    elif args.action == "drain":
        done = scenarios.drain(chain, args.protocol, args.fraction)
    else:
        done = scenarios.loss(chain, args.protocol, args.fraction)
    _print({"chain_id": chain, **done})


def _cmd_devnet(settings: Settings, args: argparse.Namespace) -> None:
    # The devnet is a tool of a source checkout, not part of the wheel: loaded only here.
    try:
        from yieldagent.devnet import actions
    except ModuleNotFoundError as missing:
        if missing.name != "yieldagent.devnet":
            raise
        raise ConfigurationError(
            "the devnet commands run from a source checkout (make install), "
            "where make devnet starts the devnet"
        ) from None

    url = _devnet_url(settings, args.chain)
    if args.action == "advance":
        if args.seconds < 0:
            raise InvalidInput.field(("seconds",), "must not be negative")
        moment = _on_devnet(actions.advance, url, args.seconds)
        _print({"time": iso(datetime.fromtimestamp(moment, UTC))})
        return
    if args.action == "price":
        feed = _collateral_feed(settings, args.chain, args.token)
        _print({"token": args.token, **_on_devnet(actions.set_feed_price, url, feed, args.usd)})
        return
    violations = _transfer_violations(args)
    if violations:
        raise InvalidInput(violations)
    _print(_on_devnet(actions.deposit, url, args.token, args.sender, args.to, args.amount))


def _transfer_violations(args: argparse.Namespace) -> list[FieldViolation]:
    """What is wrong with a deposit command's token, sender, recipient and amount."""
    violations = []
    for flag, value in (("token", args.token), ("from", args.sender), ("to", args.to)):
        if not is_address(value):
            violations.append(FieldViolation((flag,), "not an address", "value_error.address"))
    if args.amount <= 0:
        violations.append(FieldViolation(("amount",), "must be positive", "value_error"))
    return violations


def _on_devnet(action: Callable[..., T], *args: Any) -> T:
    """Runs a devnet action; an unreachable or refusing node is a ChainUnavailable."""
    try:
        return action(*args)
    except Exception as error:  # the node's and web3's errors, however they come
        raise ChainUnavailable(f"devnet: {error}") from error


def _collateral_feed(settings: Settings, chain_id: int, token: str) -> str:
    """The price feed the devnet's manifest lists for the collateral ``token``."""
    manifest = settings.deployment(chain_id)
    feeds = json.loads(manifest.read_text()).get("collateral_feeds", {}) if manifest else {}
    for collateral, feed in feeds.items():
        if collateral.lower() == token.lower():
            return str(feed["feed"])
    listed = ", ".join(sorted(feeds)) or "none"
    raise InvalidInput.field(("token",), f"no price feed for {token} on chain {chain_id}: {listed}")


def _devnet_url(settings: Settings, chain_id: int) -> str:
    """The devnet's RPC: the chain's YIELDAGENT_RPC_URL_<id>, else the devnet manifest's."""
    url = settings.rpc_urls.get(chain_id)
    manifest = settings.deployment(chain_id)
    if url is None and manifest is not None:
        recorded = json.loads(manifest.read_text())
        if recorded.get("chain_id") == chain_id:
            url = recorded.get("rpc_url")
    if not url:
        raise InvalidInput.field(
            ("chain",), f"no devnet for chain {chain_id}: run make devnet or set its RPC URL"
        )
    return str(url)


def _sim_balance(settings: Settings, args: argparse.Namespace) -> None:
    """Prints a holder's balance of a token on the simulated chain: the chain's own word,
    to check the books against."""
    violations = []
    if args.chain not in load_catalog().chains:
        violations.append(FieldViolation(("chain",), "unsupported chain", "value_error"))
    for flag, value in (("token", args.token), ("holder", args.holder)):
        if not is_address(value):
            violations.append(FieldViolation((flag,), "not an address", "value_error.address"))
    if violations:
        raise InvalidInput(violations)
    token = parse_address(args.token, ("token",))
    holder = parse_address(args.holder, ("holder",))
    _print({"amount": _market(settings).balance(args.chain, token, holder)})


def _lifecycle(settings: Settings) -> tuple[Engine, Lifecycle]:
    engine = create_db_engine(settings.database_url)
    migrate(engine)
    catalog = served_catalog(settings, load_catalog())
    operator = load_operator_wallet(settings)
    market = simulated_market(settings, engine, catalog, set_speed=False)
    chains = build_chains(settings, engine, market, catalog, operator)
    return engine, build_lifecycle(settings, engine, chains, catalog, operator.address)


def _cmd_wallet(settings: Settings, args: argparse.Namespace) -> None:
    address = parse_address(args.address, ("address",))
    _, lifecycle = _lifecycle(settings)
    if args.action == "reconcile":
        repairs = asyncio.run(lifecycle.reconcile_wallet(args.chain, address))
        _print({"wallet": address, "repairs": [r.as_json() for r in repairs]})
        return
    wallet = asyncio.run(lifecycle.operate(args.chain, address, args.action))
    _print({"wallet": wallet.address, "status": str(wallet.status)})


def _cmd_ops(settings: Settings, args: argparse.Namespace) -> None:
    engine = create_db_engine(settings.database_url)
    migrate(engine)
    operations = OperationStore(engine).listing(args.stuck, SYSTEM_CLOCK.time())
    _print({"operations": [operation_json(op) for op in operations]})


def _cmd_protocol(settings: Settings, args: argparse.Namespace) -> None:
    if args.action == "risk":
        _protocol_risk(settings, args)
        return
    if not args.name:
        raise InvalidInput.field(("name",), "Field required", "missing")
    if args.action == "clear":
        _protocol_clear(settings, args)
        return
    catalog = served_catalog(settings, load_catalog())
    chain_ids = [args.chain] if args.chain else catalog.chain_ids()
    chains = [
        c for c in chain_ids if any(token.protocol(args.name) for token in catalog.chain(c).tokens)
    ]
    if not chains:
        raise InvalidRequest(f"No protocol named {args.name!r} on chains {chain_ids}")
    engine, lifecycle = _lifecycle(settings)
    runs = RunStore(engine)
    for chain_id in chains:
        (runs.pause if args.action == "pause" else runs.resume)(chain_id, args.name)
    moved = []
    if args.action == "pause" and args.now:
        agent = build_agent(settings, engine, lifecycle)
        holders = [
            w
            for c in chains
            for w in WalletStore(engine).wallets(c)
            if w.positions.get(args.name, 0) > 0
        ]
        for wallet in holders:
            outcome = asyncio.run(agent.run(wallet.chain_id, wallet.address))
            moved.append({"wallet": wallet.address, "run": outcome.status})
    _print(
        {"protocol": args.name, "chains": chains, "paused": args.action == "pause", "runs": moved}
    )


def _protocol_risk(settings: Settings, args: argparse.Namespace) -> None:
    """Prints every pool's state under the risk guards, judged now."""
    catalog = served_catalog(settings, load_catalog())
    chain_ids = [args.chain] if args.chain else catalog.chain_ids()
    _, lifecycle = _lifecycle(settings)
    survey = lifecycle.risk
    assert survey is not None

    async def judge() -> list[dict[str, Any]]:
        pools: list[dict[str, Any]] = []
        for chain_id in chain_ids:
            chain = lifecycle.chain(chain_id)
            head = await chain.head()
            for token in catalog.chain(chain_id).tokens:
                names = [p.name for p in token.protocols]
                quotes = {q.protocol: q for q in await chain.quotes(token.address, names)}
                for judged in await survey.judge(
                    chain_id, chain, token.address, quotes, head.timestamp
                ):
                    pools.append(
                        {
                            "chain_id": chain_id,
                            "token": token.address,
                            "protocol": judged.protocol,
                            "state": str(judged.verdict.state),
                            "reasons": list(judged.verdict.reasons),
                            "rules": [str(r) for r in judged.verdict.rules],
                            "loss_excluded": judged.record.loss_excluded,
                            "service_position": str(judged.ours),
                        }
                    )
        return pools

    _print({"pools": asyncio.run(judge())})


def _protocol_clear(settings: Settings, args: argparse.Namespace) -> None:
    """Lifts a loss exclusion of a protocol on one chain."""
    if not args.chain:
        raise InvalidInput.field(("chain",), "Field required", "missing")
    _, lifecycle = _lifecycle(settings)
    survey = lifecycle.risk
    assert survey is not None
    head = asyncio.run(lifecycle.chain(args.chain).head())
    cleared = survey.clear(args.chain, args.name, head.timestamp)
    _print(
        {
            "protocol": args.name,
            "chain_id": args.chain,
            "cleared": [record.token for record in cleared],
        }
    )


def _cmd_agent(settings: Settings, args: argparse.Namespace) -> None:
    engine, lifecycle = _lifecycle(settings)
    agent = build_agent(settings, engine, lifecycle)

    async def cycle() -> tuple[int, int]:
        recovered = len(await agent.reconcile())
        return recovered, await agent.run_cycle()

    recovered, ran = asyncio.run(cycle())
    _print({"recovered": recovered, "ran": ran})


def _cmd_operator(settings: Settings, args: argparse.Namespace) -> None:
    path = settings.operator_keystore
    if args.action == "deploy-module":
        _deploy_module(settings, args)
        return
    if args.action == "address":
        _print({"address": load_operator_wallet(settings).address})
        return
    password = settings.operator_key_password.reveal()
    if password == DEV_KEY_PASSWORD:
        raise ConfigurationError(
            "set YIELDAGENT_OPERATOR_KEY_PASSWORD: a keystore for a real chain needs a "
            "password of its own"
        )
    weak = None if settings.devnet else weak_password(password)
    if weak is not None:
        raise ConfigurationError(
            f"YIELDAGENT_OPERATOR_KEY_PASSWORD is too weak for a real chain's key: {weak} "
            "(YIELDAGENT_ENV=devnet accepts it for a devnet)"
        )
    if not create_keystore(path, password):
        raise ConfigurationError(f"{path} already holds an operator key: it is kept")
    _print({"address": load_operator_wallet(settings).address, "keystore": str(path)})


def _deploying_key(path: Path) -> bytes:
    """The deploying key in ``path`` (hex), a file only its owner may read."""
    if not path.is_file():
        raise InvalidInput.field(("key-file",), f"{path} is not a file")
    if path.stat().st_mode & 0o077:
        raise InvalidInput.field(("key-file",), f"{path} is readable by others: chmod 600 it")
    text = path.read_text().strip().removeprefix("0x")
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise InvalidInput.field(("key-file",), "must hold a private key: 32 bytes in hex")
    return key


def _deploy_module(settings: Settings, args: argparse.Namespace) -> None:
    """``operator deploy-module``: deploys, lists and seals the module on a chain, then
    writes the chain's manifest with it and checks it as the service will at start-up."""
    from web3 import AsyncHTTPProvider, AsyncWeb3, HTTPProvider, Web3

    from yieldagent.chain.web3.deployment_check import ExpectedDeployment, check_deployment
    from yieldagent.chain.web3.module_deploy import ModulePlan, deploy_module

    chain_id = args.chain
    url = settings.rpc_urls.get(chain_id)
    if url is None:
        raise InvalidInput.field(("chain",), f"set YIELDAGENT_RPC_URL_{chain_id} to its node")
    source = Path(args.manifest) if args.manifest else settings.deployment(chain_id)
    if source is None or not source.is_file():
        raise InvalidInput.field(
            ("manifest",), "name the manifest of the chain's token and protocols (--manifest)"
        )
    manifest = Manifest.load(source)
    if manifest.chain_id != chain_id:
        raise InvalidInput.field(("manifest",), f"{source} describes chain {manifest.chain_id}")
    if args.admin is None:
        raise InvalidInput.field(("admin",), "name the module's admin (a Safe multisig)")
    for flag, value in (("admin", args.admin), ("operator", args.operator)):
        if value is not None and not is_address(value):
            raise InvalidInput.field((flag,), "not an address")
    feeds = dict(manifest.safe.price_feeds) if manifest.safe is not None else {}
    for given in args.feed:
        token, _, feed = given.partition("=")
        if not (is_address(token) and is_address(feed)):
            raise InvalidInput.field(("feed",), f"{given!r} is not TOKEN=FEED (two addresses)")
        feeds[to_checksum_address(token)] = to_checksum_address(feed)
    operator = args.operator or load_operator_wallet(settings).address
    router = manifest.swap_router
    plan = ModulePlan(
        chain_id=chain_id,
        admin=args.admin,
        operator=operator,
        token=manifest.token,
        protocols=manifest.protocols,
        swap_router=router if router and int(router, 16) else None,
        feeds=feeds,
        feed_max_age=args.feed_max_age,
    )
    key = _deploying_key(Path(args.key_file))
    try:
        deployed = deploy_module(Web3(HTTPProvider(url)), key, plan)
    except YieldAgentError:
        raise
    except Exception as error:  # the node's and web3's errors; their text may carry the URL
        raise ChainUnavailable(
            f"chain {chain_id}: the deployment stopped ({type(error).__name__}); "
            "run the command again to finish it"
        ) from None
    safe = SafeDeployment(
        factory=SAFE_PROXY_FACTORY_1_4_1,
        singleton=SAFE_L2_1_4_1,
        fallback_handler=COMPATIBILITY_FALLBACK_HANDLER_1_4_1,
        multi_send_call_only=MULTI_SEND_CALL_ONLY_1_4_1,
        module_setup=deployed.module_setup,
        module=deployed.module,
        admin=to_checksum_address(args.admin),
        operator=deployed.operator,
        price_feeds=feeds,
    )
    written = dataclasses.replace(manifest, safe=safe)
    out = Path(args.out) if args.out else (settings.deployment(chain_id) or source)
    written.write(out)
    expected = ExpectedDeployment(
        chain_id=chain_id,
        module=safe.module,
        module_setup=safe.module_setup,
        factory=safe.factory,
        singleton=safe.singleton,
        fallback_handler=safe.fallback_handler,
        multi_send_call_only=safe.multi_send_call_only,
        admin=safe.admin,
        operator=operator,
    )

    async def check() -> list[str]:
        w3 = AsyncWeb3(AsyncHTTPProvider(url))
        try:
            return await check_deployment(w3, expected)
        finally:
            await w3.provider.disconnect()

    problems = asyncio.run(check())
    _print(
        {
            "manifest": str(out),
            "module": deployed.module,
            "module_setup": deployed.module_setup,
            "admin": deployed.admin,
            "pending_admin": deployed.pending_admin,
            "operator": deployed.operator,
            "transactions": deployed.transactions,
            "problems": problems,
        }
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="yieldagent", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("run", help="run the whole service, Envoy included")
    commands.add_parser("serve", help="run the gRPC server and worker, without Envoy")
    commands.add_parser("migrate", help="apply database migrations")
    partner = commands.add_parser("partner", help="manage partners")
    actions = partner.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="register a partner and print its API key")
    create.add_argument("name")
    create.add_argument(
        "--permissions",
        default=",".join(sorted(PERMISSIONS)),
        help=f"comma-separated, from: {', '.join(sorted(PERMISSIONS))} (default: all)",
    )
    rotate = actions.add_parser("rotate", help="issue a new key and print it")
    rotate.add_argument("name")
    rotate.add_argument(
        "--grace",
        type=_seconds,
        default=0.0,
        metavar="SECONDS",
        help="how long the old key keeps working (default 0: it stops at once)",
    )
    for action in ("disable", "enable"):
        actions.add_parser(action).add_argument("name")
    webhook = actions.add_parser("webhook", help="set where the partner's events are posted")
    webhook.add_argument("name")
    webhook.add_argument("--url", required=True, help="http(s) URL that receives the events")
    deliveries = actions.add_parser("deliveries", help="the partner's webhook delivery log")
    deliveries.add_argument("name")
    deliveries.add_argument("--limit", type=int, default=50, help="entries shown (default 50)")
    sim = commands.add_parser("sim", help="drive the simulated chain")
    sim_actions = sim.add_subparsers(dest="action", required=True)
    advance = sim_actions.add_parser("advance", help="move simulated time ahead")
    advance.add_argument("--seconds", type=int, required=True)
    deposit = sim_actions.add_parser("deposit", help="make a user's ERC-20 transfer")
    deposit.add_argument("--chain", type=int, required=True)
    deposit.add_argument("--token", required=True)
    deposit.add_argument("--from", dest="sender", required=True)
    deposit.add_argument("--to", required=True)
    deposit.add_argument("--amount", type=int, required=True, help="in the token's smallest unit")
    balance = sim_actions.add_parser("balance", help="a holder's token balance on the chain")
    balance.add_argument("--chain", type=int, required=True)
    balance.add_argument("--token", required=True)
    balance.add_argument("--holder", required=True)
    for action, help_ in (
        ("pause", "pause a pool's supply, withdrawals or both"),
        ("unpause", "reopen what a pause stopped"),
    ):
        switch = sim_actions.add_parser(action, help=help_)
        switch.add_argument("--chain", type=int, required=True)
        switch.add_argument("--protocol", required=True)
        switch.add_argument("--what", choices=list(WHAT), default="all")
    for action, help_ in (
        ("drain", "other suppliers withdraw a fraction of the pool"),
        ("loss", "the pool loses a fraction of its assets to bad debt"),
    ):
        scenario = sim_actions.add_parser(action, help=help_)
        scenario.add_argument("--chain", type=int, required=True)
        scenario.add_argument("--protocol", required=True)
        scenario.add_argument("--fraction", required=True, help="between 0 and 1, e.g. 0.6")
    price = sim_actions.add_parser("price", help="set a simulated price feed")
    price.add_argument("--chain", type=int, required=True)
    price.add_argument("--token", required=True, help="the token's symbol, e.g. cbBTC")
    price.add_argument("--usd", required=True, help="its price in US dollars")
    sequencer = sim_actions.add_parser(
        "sequencer", help="take the chain's L2 sequencer down, or back up (its uptime feed)"
    )
    sequencer.add_argument("--chain", type=int, required=True)
    sequencer.add_argument("--status", choices=["down", "up"], required=True)
    devnet = commands.add_parser("devnet", help="drive the local EVM devnet (make devnet)")
    devnet_actions = devnet.add_subparsers(dest="action", required=True)
    devnet_advance = devnet_actions.add_parser("advance", help="move the devnet's time ahead")
    devnet_advance.add_argument("--seconds", type=int, required=True)
    devnet_advance.add_argument("--chain", type=int, default=8453)
    devnet_price = devnet_actions.add_parser("price", help="move a pegged collateral's feed")
    devnet_price.add_argument("--chain", type=int, default=8453)
    devnet_price.add_argument("--token", required=True, help="the collateral's address")
    devnet_price.add_argument("--usd", required=True, help="its feed's new answer, e.g. 0.94")
    devnet_deposit = devnet_actions.add_parser("deposit", help="make a user's ERC-20 transfer")
    devnet_deposit.add_argument("--chain", type=int, default=8453)
    devnet_deposit.add_argument("--token", required=True)
    devnet_deposit.add_argument("--from", dest="sender", required=True)
    devnet_deposit.add_argument("--to", required=True)
    devnet_deposit.add_argument("--amount", type=int, required=True, help="smallest units")
    protocol = commands.add_parser(
        "protocol", help="pause or resume a protocol; its risk guards' state"
    )
    protocol.add_argument("action", choices=["pause", "resume", "risk", "clear"])
    protocol.add_argument("name", nargs="?", default="")
    protocol.add_argument("--chain", type=int, default=0, help="one chain (default: all)")
    protocol.add_argument(
        "--now", action="store_true", help="with pause: run every wallet holding it right away"
    )
    ops = commands.add_parser("ops", help="money operations")
    ops.add_argument("action", choices=["list"], help="list: unfinished operations, as JSON")
    ops.add_argument(
        "--stuck",
        action="store_true",
        help="only those whose process died or that wait for a pool's cash",
    )
    totals = commands.add_parser("totals", help="the chains' totals behind /stats and /tokens")
    totals.add_argument(
        "action",
        choices=["check", "rebuild"],
        help="check: compare them with a recomputation from every wallet; rebuild: "
        "recompute them (with no replica writing)",
    )
    agent = commands.add_parser("agent", help="run the agent")
    agent.add_argument("action", choices=["cycle"])
    wallet = commands.add_parser("wallet", help="operator actions on a wallet")
    wallet.add_argument(
        "action",
        choices=["block", "unblock", "emergency", "resume", "reconcile"],
        help="reconcile: finish its open operations and book its chain events now",
    )
    wallet.add_argument("address")
    wallet.add_argument("--chain", type=int, default=8453, help="chain id (default: 8453)")
    operator = commands.add_parser("operator", help="the operator key")
    operator.add_argument(
        "action",
        choices=["create-key", "address", "deploy-module"],
        help="create-key: a new keystore under the data dir (never replacing one); "
        "address: the operator's address; deploy-module: the operator module on a chain",
    )
    operator.add_argument("--chain", type=int, default=8453, help="deploy-module: chain id")
    operator.add_argument(
        "--manifest", help="deploy-module: the chain's manifest (token, protocols) to start from"
    )
    operator.add_argument("--out", help="deploy-module: where to write the manifest")
    operator.add_argument(
        "--key-file", help="deploy-module: the deploying key (hex, mode 600), the first admin"
    )
    operator.add_argument(
        "--admin", help="deploy-module: the admin after the deployment (a Safe multisig)"
    )
    operator.add_argument(
        "--operator", help="deploy-module: the operator (default: this service's key)"
    )
    operator.add_argument(
        "--feed",
        action="append",
        default=[],
        metavar="TOKEN=FEED",
        help="deploy-module: a token's USD price feed (the base token's, each reward's)",
    )
    operator.add_argument(
        "--feed-max-age",
        type=int,
        default=90_000,
        help="deploy-module: seconds before a feed's answer is stale (default 90000)",
    )
    return parser


_COMMANDS: dict[str, Callable[[Settings, argparse.Namespace], None]] = {
    "run": _cmd_run,
    "serve": _cmd_run,
    "migrate": _cmd_migrate,
    "partner": _cmd_partner,
    "sim": _cmd_sim,
    "devnet": _cmd_devnet,
    "wallet": _cmd_wallet,
    "protocol": _cmd_protocol,
    "agent": _cmd_agent,
    "ops": _cmd_ops,
    "totals": _cmd_totals,
    "operator": _cmd_operator,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``yieldagent`` command."""
    args = _parser().parse_args(argv)
    try:
        settings = load_settings()
        configure_logging(settings.log_level, settings.log_format, logged_secrets(settings))
        _COMMANDS[args.command](settings, args)
    except (YieldAgentError, MarketError) as error:
        # A detail of several lines (production mode's problems) is printed as a list.
        first, *rest = str(getattr(error, "detail", str(error))).split("\n")
        reported: dict[str, Any] = {"error": first, **({"problems": rest} if rest else {})}
        print(json.dumps(reported), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
