"""Method policies come from the proto options alone."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool

from yieldagent.servicers.method_policy import (
    INTEGERS_HEADER,
    MONEY_CALLS,
    NULLS_HEADER,
    STATUS_HEADER,
    api_services,
    load_policies,
)
from yieldagent.v1 import options_pb2, wallets_pb2

POLICIES = load_policies()


def _hints(method: str) -> dict[str, str]:
    return dict(POLICIES[method].rest_metadata)


def test_every_rpc_of_every_api_service_has_a_policy() -> None:
    methods = {f"/{s.full_name}/{m.name}" for s in api_services() for m in s.methods}
    assert methods == set(POLICIES)
    assert len(methods) == 40  # 39 unary methods and the WatchWallet stream


def test_success_statuses() -> None:
    codes = {
        name.rsplit("/", 1)[1]: p.success_status
        for name, p in POLICIES.items()
        if p.success_status != 200
    }
    assert codes == {
        "ActivateWallet": 201,
        "TopUp": 201,
        "UpdateProtocols": 204,
        "SetRewardStaking": 204,
        "UpdateConstraints": 204,
    }
    assert _hints("/yieldagent.v1.WalletService/TopUp")[STATUS_HEADER] == "201"


def test_public_and_keyed_methods() -> None:
    public = sorted(name for name, p in POLICIES.items() if p.permission is None)
    assert public == [
        "/yieldagent.v1.CatalogService/ListChains",
        "/yieldagent.v1.CatalogService/ListProtocolSupply",
        "/yieldagent.v1.CatalogService/ListProtocols",
        "/yieldagent.v1.CatalogService/ListTokens",
        "/yieldagent.v1.ConfigService/GetConfig",
        "/yieldagent.v1.HealthcheckService/Healthcheck",
        "/yieldagent.v1.HistoryService/GetProtocolHistory",
        "/yieldagent.v1.StatsService/GetStats",
        "/yieldagent.v1.WalletService/GetWallet",
    ]


def test_wallet_record_integers_and_nulls() -> None:
    hints = _hints("/yieldagent.v1.WalletService/GetWallet")
    integers = hints[INTEGERS_HEADER].split(",")
    assert "deposits.amount" in integers and "withdraws.fee_amount" in integers
    assert "withdraws.amount" not in integers  # the contract prints it as a string
    nulls = hints[NULLS_HEADER].split(",")
    assert {"last_deactivation_date", "last_reactivation_date"} <= set(nulls)


def test_field_locations_follow_the_http_rule() -> None:
    transactions = POLICIES["/yieldagent.v1.WalletService/ListTransactions"]
    assert transactions.locate(("page",)) == ("query", "page")
    assert transactions.locate(("wallet",)) == ("path", "wallet")
    activation = POLICIES["/yieldagent.v1.WalletService/ActivateWallet"]
    assert activation.locate(("constraints", 0, "kind")) == ("body", "constraints", 0, "kind")
    protocols = POLICIES["/yieldagent.v1.WalletService/UpdateProtocols"]
    assert protocols.locate(("protocols", 2)) == ("body", 2)  # the bare array is the body
    assert activation.locate(("header", "Idempotency-Key")) == ("header", "Idempotency-Key")


def test_the_methods_that_take_idempotency_keys() -> None:
    idempotent = {name.rsplit("/", 1)[1]: p for name, p in POLICIES.items() if p.idempotent}
    assert sorted(idempotent) == [
        "ActivateWallet",
        "ClaimRewards",
        "CreateSafeAccount",
        "CreateSmartAccount",
        "DeactivateWallet",
        "RunAgent",
        "TopUp",
        "Withdraw",
    ]
    assert all(p.permission is not None for p in idempotent.values())
    withdraw = idempotent["Withdraw"]
    assert withdraw.response_type is wallets_pb2.WithdrawResponse
    assert POLICIES["/yieldagent.v1.WalletService/GetWallet"].response_type is None


def test_an_idempotent_method_must_name_a_permission() -> None:
    public = descriptor_pb2.FileDescriptorProto(
        name="idempotent_public_test.proto",
        package="idempotency.test",
        dependency=["yieldagent/v1/options.proto"],
    )
    public.message_type.add(name="Empty")
    method = public.service.add(name="Public").method.add(
        name="Call", input_type=".idempotency.test.Empty", output_type=".idempotency.test.Empty"
    )
    method.options.Extensions[options_pb2.idempotent] = True  # type: ignore[index]
    pool = descriptor_pool.DescriptorPool()
    for dependency in (descriptor_pb2, options_pb2):
        proto = descriptor_pb2.FileDescriptorProto()
        dependency.DESCRIPTOR.CopyToProto(proto)
        pool.Add(proto)
    pool.Add(public)
    service = pool.FindServiceByName("idempotency.test.Public")
    with pytest.raises(ValueError, match="names no partner_permission"):
        load_policies([service])


def test_the_money_calls_are_keyed_calls_on_one_wallet() -> None:
    # The interceptor counts a money call by the request's chain_id and wallet.
    counted = {name for name, policy in POLICIES.items() if policy.money_call}
    assert counted == MONEY_CALLS
    by_name = {f"/{s.full_name}/{m.name}": m for s in api_services() for m in s.methods}
    for name in MONEY_CALLS:
        assert POLICIES[name].permission is not None and POLICIES[name].idempotent
        fields = by_name[name].input_type.fields_by_name
        assert {"chain_id", "wallet"} <= set(fields), name
