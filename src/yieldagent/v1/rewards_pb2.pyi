from google.api import annotations_pb2 as _annotations_pb2
from yieldagent.v1 import options_pb2 as _options_pb2
from yieldagent.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ClaimRewardsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ...) -> None: ...

class ClaimRewardsResponse(_message.Message):
    __slots__ = ("rewards",)
    REWARDS_FIELD_NUMBER: _ClassVar[int]
    rewards: _containers.RepeatedCompositeFieldContainer[ClaimedReward]
    def __init__(self, rewards: _Optional[_Iterable[_Union[ClaimedReward, _Mapping]]] = ...) -> None: ...

class ClaimedReward(_message.Message):
    __slots__ = ("token", "amount", "amount_float", "current_price_in_underlying")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FLOAT_FIELD_NUMBER: _ClassVar[int]
    CURRENT_PRICE_IN_UNDERLYING_FIELD_NUMBER: _ClassVar[int]
    token: str
    amount: str
    amount_float: float
    current_price_in_underlying: float
    def __init__(self, token: _Optional[str] = ..., amount: _Optional[str] = ..., amount_float: _Optional[float] = ..., current_price_in_underlying: _Optional[float] = ...) -> None: ...

class ListRewardHistoryRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "page", "limit", "sort")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SORT_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    page: int
    limit: int
    sort: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., page: _Optional[int] = ..., limit: _Optional[int] = ..., sort: _Optional[str] = ...) -> None: ...

class ListRewardHistoryResponse(_message.Message):
    __slots__ = ("rewards", "pagination")
    REWARDS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    rewards: _containers.RepeatedCompositeFieldContainer[Reward]
    pagination: _types_pb2.Pagination
    def __init__(self, rewards: _Optional[_Iterable[_Union[Reward, _Mapping]]] = ..., pagination: _Optional[_Union[_types_pb2.Pagination, _Mapping]] = ...) -> None: ...

class Reward(_message.Message):
    __slots__ = ("date", "token_symbol", "amount", "dollar_value", "transaction_hash", "is_staked")
    DATE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_SYMBOL_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    DOLLAR_VALUE_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_HASH_FIELD_NUMBER: _ClassVar[int]
    IS_STAKED_FIELD_NUMBER: _ClassVar[int]
    date: str
    token_symbol: str
    amount: float
    dollar_value: float
    transaction_hash: str
    is_staked: bool
    def __init__(self, date: _Optional[str] = ..., token_symbol: _Optional[str] = ..., amount: _Optional[float] = ..., dollar_value: _Optional[float] = ..., transaction_hash: _Optional[str] = ..., is_staked: _Optional[bool] = ...) -> None: ...

class GetRewardStakingRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "page", "limit", "sort")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SORT_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    page: int
    limit: int
    sort: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., page: _Optional[int] = ..., limit: _Optional[int] = ..., sort: _Optional[str] = ...) -> None: ...

class GetRewardStakingResponse(_message.Message):
    __slots__ = ("is_staked", "rewards", "pagination")
    IS_STAKED_FIELD_NUMBER: _ClassVar[int]
    REWARDS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    is_staked: bool
    rewards: _containers.RepeatedCompositeFieldContainer[RewardClaim]
    pagination: _types_pb2.Pagination
    def __init__(self, is_staked: _Optional[bool] = ..., rewards: _Optional[_Iterable[_Union[RewardClaim, _Mapping]]] = ..., pagination: _Optional[_Union[_types_pb2.Pagination, _Mapping]] = ...) -> None: ...

class RewardClaim(_message.Message):
    __slots__ = ("id", "user_id", "base_apr", "extra_apr", "ticker", "reward_amount", "group", "transaction_hash", "start_date", "end_date", "created_at", "updated_at", "date", "token_symbol", "amount", "dollar_value", "is_staked", "amount_units")
    ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    BASE_APR_FIELD_NUMBER: _ClassVar[int]
    EXTRA_APR_FIELD_NUMBER: _ClassVar[int]
    TICKER_FIELD_NUMBER: _ClassVar[int]
    REWARD_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_HASH_FIELD_NUMBER: _ClassVar[int]
    START_DATE_FIELD_NUMBER: _ClassVar[int]
    END_DATE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    DATE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_SYMBOL_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    DOLLAR_VALUE_FIELD_NUMBER: _ClassVar[int]
    IS_STAKED_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_UNITS_FIELD_NUMBER: _ClassVar[int]
    id: str
    user_id: str
    base_apr: float
    extra_apr: float
    ticker: str
    reward_amount: float
    group: str
    transaction_hash: str
    start_date: str
    end_date: str
    created_at: str
    updated_at: str
    date: str
    token_symbol: str
    amount: float
    dollar_value: float
    is_staked: bool
    amount_units: str
    def __init__(self, id: _Optional[str] = ..., user_id: _Optional[str] = ..., base_apr: _Optional[float] = ..., extra_apr: _Optional[float] = ..., ticker: _Optional[str] = ..., reward_amount: _Optional[float] = ..., group: _Optional[str] = ..., transaction_hash: _Optional[str] = ..., start_date: _Optional[str] = ..., end_date: _Optional[str] = ..., created_at: _Optional[str] = ..., updated_at: _Optional[str] = ..., date: _Optional[str] = ..., token_symbol: _Optional[str] = ..., amount: _Optional[float] = ..., dollar_value: _Optional[float] = ..., is_staked: _Optional[bool] = ..., amount_units: _Optional[str] = ...) -> None: ...

class SetRewardStakingRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "is_staked")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    IS_STAKED_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    is_staked: bool
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., is_staked: _Optional[bool] = ...) -> None: ...

class SetRewardStakingResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
