from google.api import annotations_pb2 as _annotations_pb2
from yieldagent.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetProtocolHistoryRequest(_message.Message):
    __slots__ = ("chain_id", "protocol", "to", "interval", "token")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    protocol: str
    to: str
    interval: str
    token: str
    def __init__(self, chain_id: _Optional[int] = ..., protocol: _Optional[str] = ..., to: _Optional[str] = ..., interval: _Optional[str] = ..., token: _Optional[str] = ..., **kwargs) -> None: ...

class GetProtocolHistoryResponse(_message.Message):
    __slots__ = ("points",)
    POINTS_FIELD_NUMBER: _ClassVar[int]
    points: _containers.RepeatedCompositeFieldContainer[ProtocolHistoryPoint]
    def __init__(self, points: _Optional[_Iterable[_Union[ProtocolHistoryPoint, _Mapping]]] = ...) -> None: ...

class ProtocolHistoryPoint(_message.Message):
    __slots__ = ("time", "apy_base", "apy_rewards", "tvl", "utilization")
    TIME_FIELD_NUMBER: _ClassVar[int]
    APY_BASE_FIELD_NUMBER: _ClassVar[int]
    APY_REWARDS_FIELD_NUMBER: _ClassVar[int]
    TVL_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    time: str
    apy_base: float
    apy_rewards: float
    tvl: float
    utilization: float
    def __init__(self, time: _Optional[str] = ..., apy_base: _Optional[float] = ..., apy_rewards: _Optional[float] = ..., tvl: _Optional[float] = ..., utilization: _Optional[float] = ...) -> None: ...

class GetWalletPerformanceRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "from_date")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    FROM_DATE_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    from_date: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., from_date: _Optional[str] = ...) -> None: ...

class GetWalletPerformanceResponse(_message.Message):
    __slots__ = ("performance",)
    PERFORMANCE_FIELD_NUMBER: _ClassVar[int]
    performance: _containers.RepeatedCompositeFieldContainer[PerformancePoint]
    def __init__(self, performance: _Optional[_Iterable[_Union[PerformancePoint, _Mapping]]] = ...) -> None: ...

class PerformancePoint(_message.Message):
    __slots__ = ("date", "value", "value_in_usd", "accrued_rewards", "portfolio", "agent_token_amount")
    class AccruedRewardsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: AccruedRewards
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AccruedRewards, _Mapping]] = ...) -> None: ...
    class PortfolioEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: AllocatedValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AllocatedValue, _Mapping]] = ...) -> None: ...
    DATE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VALUE_IN_USD_FIELD_NUMBER: _ClassVar[int]
    ACCRUED_REWARDS_FIELD_NUMBER: _ClassVar[int]
    PORTFOLIO_FIELD_NUMBER: _ClassVar[int]
    AGENT_TOKEN_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    date: str
    value: float
    value_in_usd: float
    accrued_rewards: _containers.MessageMap[str, AccruedRewards]
    portfolio: _containers.MessageMap[str, AllocatedValue]
    agent_token_amount: float
    def __init__(self, date: _Optional[str] = ..., value: _Optional[float] = ..., value_in_usd: _Optional[float] = ..., accrued_rewards: _Optional[_Mapping[str, AccruedRewards]] = ..., portfolio: _Optional[_Mapping[str, AllocatedValue]] = ..., agent_token_amount: _Optional[float] = ...) -> None: ...

class AccruedRewards(_message.Message):
    __slots__ = ("locked", "unlocked", "locked_value", "locked_value_usd", "unlocked_value", "unlocked_value_usd", "claimed", "claimed_value", "claimed_value_usd")
    LOCKED_FIELD_NUMBER: _ClassVar[int]
    UNLOCKED_FIELD_NUMBER: _ClassVar[int]
    LOCKED_VALUE_FIELD_NUMBER: _ClassVar[int]
    LOCKED_VALUE_USD_FIELD_NUMBER: _ClassVar[int]
    UNLOCKED_VALUE_FIELD_NUMBER: _ClassVar[int]
    UNLOCKED_VALUE_USD_FIELD_NUMBER: _ClassVar[int]
    CLAIMED_FIELD_NUMBER: _ClassVar[int]
    CLAIMED_VALUE_FIELD_NUMBER: _ClassVar[int]
    CLAIMED_VALUE_USD_FIELD_NUMBER: _ClassVar[int]
    locked: float
    unlocked: float
    locked_value: float
    locked_value_usd: float
    unlocked_value: float
    unlocked_value_usd: float
    claimed: float
    claimed_value: float
    claimed_value_usd: float
    def __init__(self, locked: _Optional[float] = ..., unlocked: _Optional[float] = ..., locked_value: _Optional[float] = ..., locked_value_usd: _Optional[float] = ..., unlocked_value: _Optional[float] = ..., unlocked_value_usd: _Optional[float] = ..., claimed: _Optional[float] = ..., claimed_value: _Optional[float] = ..., claimed_value_usd: _Optional[float] = ...) -> None: ...

class AllocatedValue(_message.Message):
    __slots__ = ("value", "value_in_usd", "base_apr", "total_apr", "apy_base", "apy_rewards", "apy_total", "apy_net")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VALUE_IN_USD_FIELD_NUMBER: _ClassVar[int]
    BASE_APR_FIELD_NUMBER: _ClassVar[int]
    TOTAL_APR_FIELD_NUMBER: _ClassVar[int]
    APY_BASE_FIELD_NUMBER: _ClassVar[int]
    APY_REWARDS_FIELD_NUMBER: _ClassVar[int]
    APY_TOTAL_FIELD_NUMBER: _ClassVar[int]
    APY_NET_FIELD_NUMBER: _ClassVar[int]
    value: float
    value_in_usd: float
    base_apr: float
    total_apr: float
    apy_base: float
    apy_rewards: float
    apy_total: float
    apy_net: float
    def __init__(self, value: _Optional[float] = ..., value_in_usd: _Optional[float] = ..., base_apr: _Optional[float] = ..., total_apr: _Optional[float] = ..., apy_base: _Optional[float] = ..., apy_rewards: _Optional[float] = ..., apy_total: _Optional[float] = ..., apy_net: _Optional[float] = ...) -> None: ...

class ListWalletTokenAprsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "token_price", "period")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    TOKEN_PRICE_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    token_price: float
    period: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., token_price: _Optional[float] = ..., period: _Optional[str] = ...) -> None: ...

class ListWalletTokenAprsResponse(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[AllocatedValue]
    def __init__(self, items: _Optional[_Iterable[_Union[AllocatedValue, _Mapping]]] = ...) -> None: ...

class GetWalletEarningsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "to", "interval")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    to: str
    interval: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., to: _Optional[str] = ..., interval: _Optional[str] = ..., **kwargs) -> None: ...

class GetWalletEarningsResponse(_message.Message):
    __slots__ = ("earnings", "total_yield_amount", "total_fee_amount")
    EARNINGS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_YIELD_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FEE_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    earnings: _containers.RepeatedCompositeFieldContainer[Earning]
    total_yield_amount: str
    total_fee_amount: str
    def __init__(self, earnings: _Optional[_Iterable[_Union[Earning, _Mapping]]] = ..., total_yield_amount: _Optional[str] = ..., total_fee_amount: _Optional[str] = ...) -> None: ...

class Earning(_message.Message):
    __slots__ = ("date", "yield_amount", "fee_amount")
    DATE_FIELD_NUMBER: _ClassVar[int]
    YIELD_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    FEE_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    date: str
    yield_amount: str
    fee_amount: str
    def __init__(self, date: _Optional[str] = ..., yield_amount: _Optional[str] = ..., fee_amount: _Optional[str] = ...) -> None: ...
