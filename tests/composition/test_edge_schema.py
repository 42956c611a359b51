"""The request schema the edge checks REST requests against comes from the protos."""

from __future__ import annotations

import json
import re
from pathlib import Path

from yieldagent.composition.edge import render_config, request_schema
from yieldagent.config import load_settings
from yieldagent.servicers.method_policy import api_services

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = request_schema()


def test_every_api_method_is_described_with_its_http_rule() -> None:
    methods = {f"/{s.full_name}/{m.name}" for s in api_services() for m in s.methods}
    assert set(SCHEMA["methods"]) == methods
    withdraw = dict(SCHEMA["methods"]["/yieldagent.v1.WalletService/Withdraw"])
    hints = withdraw.pop("hints")
    assert withdraw == {
        "template": "/api/v1/{chain_id}/wallets/{wallet}:withdraw",
        "body": "*",
        "message": "yieldagent.v1.WithdrawRequest",
    }
    assert "withdraw_details.fee_amount" in hints["integers"].split(",")
    assert "withdraw_details.tx_hash" in hints["nulls"].split(",")
    assert "status" not in hints  # a 200
    protocols = SCHEMA["methods"]["/yieldagent.v1.WalletService/UpdateProtocols"]
    assert protocols["body"] == "protocols"
    assert protocols["hints"] == {"status": "204"}
    assert SCHEMA["methods"]["/yieldagent.v1.WalletService/TopUp"]["hints"] == {"status": "201"}
    assert SCHEMA["methods"]["/yieldagent.v1.CatalogService/ListChains"]["hints"] == {}
    assert SCHEMA["methods"]["/yieldagent.v1.WalletService/GetWallet"]["body"] == ""


def test_each_field_takes_the_json_type_of_its_proto_type() -> None:
    messages = SCHEMA["messages"]
    staking = messages["yieldagent.v1.SetRewardStakingRequest"]["fields"]
    assert staking == {
        "chain_id": {"type": "integer"},
        "wallet": {"type": "string"},
        "is_staked": {"type": "bool"},
    }
    assert messages["yieldagent.v1.UpdateProtocolsRequest"]["fields"]["protocols"] == {
        "type": "string",
        "repeated": True,
    }
    params = messages["yieldagent.v1.ConstraintParams"]["fields"]
    assert params["max_amount"] == {"type": "amount"}  # json_integer: integer or string
    assert params["max_ratio"] == {"type": "number"}
    optimize = messages["yieldagent.v1.OptimizeRequest"]["fields"]
    assert optimize["total_capital"] == {"type": "amount"}
    assert optimize["current_allocations"] == {"type": "map", "value": {"type": "amount"}}
    assert optimize["constraints"] == {
        "type": "message",
        "message": "yieldagent.v1.Constraint",
        "repeated": True,
    }


def test_fields_answer_to_their_proto_and_json_names() -> None:
    names = SCHEMA["messages"]["yieldagent.v1.ActivateWalletRequest"]["names"]
    assert names["initial_token"] == names["initialToken"] == "initial_token"


def test_rendering_puts_the_schema_in_the_api_routes_metadata() -> None:
    settings = load_settings(
        {
            "YIELDAGENT_ENVOY_CONFIG": str(ROOT / "envoy" / "envoy.yaml"),
            "YIELDAGENT_DESCRIPTOR_SET": str(ROOT / "build/yieldagent.pb"),
        }
    )
    text = render_config(settings, grpc_port=15051)
    [rendered] = re.findall(r"yieldagent\.rest_check: \{request_schema: (.*)\}$", text, re.M)
    assert json.loads(rendered) == SCHEMA
    assert f"filename: {ROOT / 'envoy' / 'rest_check.lua'}" in text
    # After the transcoder, so that it knows each request's gRPC method.
    assert text.index("name: yieldagent.rest_check") > text.index("grpc_json_transcoder.v3")


def test_the_shipped_config_leaves_the_schema_to_rendering() -> None:
    assert "{request_schema: {}}" in (ROOT / "envoy" / "envoy.yaml").read_text()
