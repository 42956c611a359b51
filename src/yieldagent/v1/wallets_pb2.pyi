from google.api import annotations_pb2 as _annotations_pb2
from yieldagent.v1 import options_pb2 as _options_pb2
from yieldagent.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Wallet(_message.Message):
    __slots__ = ("wallet", "status", "deposits", "withdraws", "selected_protocols", "current_protocol", "current_protocols", "current_token", "activation_date", "last_deactivation_date", "last_reactivation_date", "eoa", "status_reason", "withdrawable")
    WALLET_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DEPOSITS_FIELD_NUMBER: _ClassVar[int]
    WITHDRAWS_FIELD_NUMBER: _ClassVar[int]
    SELECTED_PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    CURRENT_PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ACTIVATION_DATE_FIELD_NUMBER: _ClassVar[int]
    LAST_DEACTIVATION_DATE_FIELD_NUMBER: _ClassVar[int]
    LAST_REACTIVATION_DATE_FIELD_NUMBER: _ClassVar[int]
    EOA_FIELD_NUMBER: _ClassVar[int]
    STATUS_REASON_FIELD_NUMBER: _ClassVar[int]
    WITHDRAWABLE_FIELD_NUMBER: _ClassVar[int]
    wallet: str
    status: str
    deposits: _containers.RepeatedCompositeFieldContainer[_types_pb2.Deposit]
    withdraws: _containers.RepeatedCompositeFieldContainer[_types_pb2.WithdrawDetail]
    selected_protocols: _containers.RepeatedScalarFieldContainer[str]
    current_protocol: str
    current_protocols: _containers.RepeatedScalarFieldContainer[str]
    current_token: str
    activation_date: str
    last_deactivation_date: str
    last_reactivation_date: str
    eoa: str
    status_reason: str
    withdrawable: str
    def __init__(self, wallet: _Optional[str] = ..., status: _Optional[str] = ..., deposits: _Optional[_Iterable[_Union[_types_pb2.Deposit, _Mapping]]] = ..., withdraws: _Optional[_Iterable[_Union[_types_pb2.WithdrawDetail, _Mapping]]] = ..., selected_protocols: _Optional[_Iterable[str]] = ..., current_protocol: _Optional[str] = ..., current_protocols: _Optional[_Iterable[str]] = ..., current_token: _Optional[str] = ..., activation_date: _Optional[str] = ..., last_deactivation_date: _Optional[str] = ..., last_reactivation_date: _Optional[str] = ..., eoa: _Optional[str] = ..., status_reason: _Optional[str] = ..., withdrawable: _Optional[str] = ...) -> None: ...

class ActivateWalletRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "eoa", "initial_token", "selected_protocols", "tx_hash", "constraints")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    EOA_FIELD_NUMBER: _ClassVar[int]
    INITIAL_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SELECTED_PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    TX_HASH_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    eoa: str
    initial_token: str
    selected_protocols: _containers.RepeatedScalarFieldContainer[str]
    tx_hash: str
    constraints: _containers.RepeatedCompositeFieldContainer[_types_pb2.Constraint]
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., eoa: _Optional[str] = ..., initial_token: _Optional[str] = ..., selected_protocols: _Optional[_Iterable[str]] = ..., tx_hash: _Optional[str] = ..., constraints: _Optional[_Iterable[_Union[_types_pb2.Constraint, _Mapping]]] = ...) -> None: ...

class ActivateWalletResponse(_message.Message):
    __slots__ = ("message", "wallet")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    message: str
    wallet: str
    def __init__(self, message: _Optional[str] = ..., wallet: _Optional[str] = ...) -> None: ...

class GetWalletRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "eoa")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    EOA_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    eoa: bool
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., eoa: _Optional[bool] = ...) -> None: ...

class DeactivateWalletRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "transfer")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    transfer: bool
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., transfer: _Optional[bool] = ...) -> None: ...

class DeactivateWalletResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class WithdrawRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "amount")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    amount: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., amount: _Optional[str] = ...) -> None: ...

class WithdrawResponse(_message.Message):
    __slots__ = ("date", "total_value", "total_value_in_usd", "withdraw_details")
    DATE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_VALUE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_VALUE_IN_USD_FIELD_NUMBER: _ClassVar[int]
    WITHDRAW_DETAILS_FIELD_NUMBER: _ClassVar[int]
    date: str
    total_value: float
    total_value_in_usd: float
    withdraw_details: _containers.RepeatedCompositeFieldContainer[_types_pb2.WithdrawDetail]
    def __init__(self, date: _Optional[str] = ..., total_value: _Optional[float] = ..., total_value_in_usd: _Optional[float] = ..., withdraw_details: _Optional[_Iterable[_Union[_types_pb2.WithdrawDetail, _Mapping]]] = ...) -> None: ...

class RunAgentRequest(_message.Message):
    __slots__ = ("chain_id", "wallet")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ...) -> None: ...

class RunAgentResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: str
    def __init__(self, status: _Optional[str] = ...) -> None: ...

class TopUpRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "tx_hash")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    TX_HASH_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    tx_hash: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., tx_hash: _Optional[str] = ...) -> None: ...

class TopUpResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class UpdateProtocolsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "protocols")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    protocols: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., protocols: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdateProtocolsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTransactionsRequest(_message.Message):
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

class ListTransactionsResponse(_message.Message):
    __slots__ = ("transactions", "pagination")
    TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    transactions: _containers.RepeatedCompositeFieldContainer[Transaction]
    pagination: _types_pb2.Pagination
    def __init__(self, transactions: _Optional[_Iterable[_Union[Transaction, _Mapping]]] = ..., pagination: _Optional[_Union[_types_pb2.Pagination, _Mapping]] = ...) -> None: ...

class Transaction(_message.Message):
    __slots__ = ("action", "date", "amount", "token_type", "status", "transaction_hash", "protocol", "new_token", "amount_out", "apr", "block_number", "correlation_id")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    DATE_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_HASH_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    NEW_TOKEN_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_OUT_FIELD_NUMBER: _ClassVar[int]
    APR_FIELD_NUMBER: _ClassVar[int]
    BLOCK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    CORRELATION_ID_FIELD_NUMBER: _ClassVar[int]
    action: str
    date: str
    amount: str
    token_type: str
    status: str
    transaction_hash: str
    protocol: str
    new_token: str
    amount_out: str
    apr: float
    block_number: int
    correlation_id: str
    def __init__(self, action: _Optional[str] = ..., date: _Optional[str] = ..., amount: _Optional[str] = ..., token_type: _Optional[str] = ..., status: _Optional[str] = ..., transaction_hash: _Optional[str] = ..., protocol: _Optional[str] = ..., new_token: _Optional[str] = ..., amount_out: _Optional[str] = ..., apr: _Optional[float] = ..., block_number: _Optional[int] = ..., correlation_id: _Optional[str] = ...) -> None: ...

class GetAprRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "start_date", "end_date", "use_exact_end_date")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    START_DATE_FIELD_NUMBER: _ClassVar[int]
    END_DATE_FIELD_NUMBER: _ClassVar[int]
    USE_EXACT_END_DATE_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    start_date: str
    end_date: str
    use_exact_end_date: bool
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., start_date: _Optional[str] = ..., end_date: _Optional[str] = ..., use_exact_end_date: _Optional[bool] = ...) -> None: ...

class GetAprResponse(_message.Message):
    __slots__ = ("apr", "sub_periods")
    APR_FIELD_NUMBER: _ClassVar[int]
    SUB_PERIODS_FIELD_NUMBER: _ClassVar[int]
    apr: float
    sub_periods: _containers.RepeatedCompositeFieldContainer[AprSubPeriod]
    def __init__(self, apr: _Optional[float] = ..., sub_periods: _Optional[_Iterable[_Union[AprSubPeriod, _Mapping]]] = ...) -> None: ...

class AprSubPeriod(_message.Message):
    __slots__ = ("start_date", "end_date", "return_", "initial_value")
    START_DATE_FIELD_NUMBER: _ClassVar[int]
    END_DATE_FIELD_NUMBER: _ClassVar[int]
    RETURN__FIELD_NUMBER: _ClassVar[int]
    INITIAL_VALUE_FIELD_NUMBER: _ClassVar[int]
    start_date: str
    end_date: str
    return_: float
    initial_value: float
    def __init__(self, start_date: _Optional[str] = ..., end_date: _Optional[str] = ..., return_: _Optional[float] = ..., initial_value: _Optional[float] = ...) -> None: ...

class WatchWalletRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "cursor")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    cursor: int
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., cursor: _Optional[int] = ...) -> None: ...

class WalletEvent(_message.Message):
    __slots__ = ("id", "type", "created_at", "chain_id", "wallet", "activated", "deposit_credited", "run_completed", "withdrawn", "deactivated", "reward_claimed", "blocked", "protocol_risk_changed", "module_change_proposed")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    ACTIVATED_FIELD_NUMBER: _ClassVar[int]
    DEPOSIT_CREDITED_FIELD_NUMBER: _ClassVar[int]
    RUN_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    WITHDRAWN_FIELD_NUMBER: _ClassVar[int]
    DEACTIVATED_FIELD_NUMBER: _ClassVar[int]
    REWARD_CLAIMED_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_RISK_CHANGED_FIELD_NUMBER: _ClassVar[int]
    MODULE_CHANGE_PROPOSED_FIELD_NUMBER: _ClassVar[int]
    id: int
    type: str
    created_at: str
    chain_id: int
    wallet: str
    activated: WalletActivated
    deposit_credited: DepositCredited
    run_completed: RunCompleted
    withdrawn: Withdrawn
    deactivated: WalletDeactivated
    reward_claimed: RewardClaimed
    blocked: WalletBlocked
    protocol_risk_changed: ProtocolRiskChanged
    module_change_proposed: ModuleChangeProposed
    def __init__(self, id: _Optional[int] = ..., type: _Optional[str] = ..., created_at: _Optional[str] = ..., chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., activated: _Optional[_Union[WalletActivated, _Mapping]] = ..., deposit_credited: _Optional[_Union[DepositCredited, _Mapping]] = ..., run_completed: _Optional[_Union[RunCompleted, _Mapping]] = ..., withdrawn: _Optional[_Union[Withdrawn, _Mapping]] = ..., deactivated: _Optional[_Union[WalletDeactivated, _Mapping]] = ..., reward_claimed: _Optional[_Union[RewardClaimed, _Mapping]] = ..., blocked: _Optional[_Union[WalletBlocked, _Mapping]] = ..., protocol_risk_changed: _Optional[_Union[ProtocolRiskChanged, _Mapping]] = ..., module_change_proposed: _Optional[_Union[ModuleChangeProposed, _Mapping]] = ...) -> None: ...

class ModuleChangeProposed(_message.Message):
    __slots__ = ("module", "change_id", "kind", "subject", "selector", "new_value", "proposed_at", "effective_at")
    MODULE_FIELD_NUMBER: _ClassVar[int]
    CHANGE_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    NEW_VALUE_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_AT_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_AT_FIELD_NUMBER: _ClassVar[int]
    module: str
    change_id: str
    kind: str
    subject: str
    selector: str
    new_value: str
    proposed_at: str
    effective_at: str
    def __init__(self, module: _Optional[str] = ..., change_id: _Optional[str] = ..., kind: _Optional[str] = ..., subject: _Optional[str] = ..., selector: _Optional[str] = ..., new_value: _Optional[str] = ..., proposed_at: _Optional[str] = ..., effective_at: _Optional[str] = ...) -> None: ...

class ProtocolRiskChanged(_message.Message):
    __slots__ = ("protocol", "token", "state", "previous_state", "reasons")
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_STATE_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    protocol: str
    token: str
    state: str
    previous_state: str
    reasons: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, protocol: _Optional[str] = ..., token: _Optional[str] = ..., state: _Optional[str] = ..., previous_state: _Optional[str] = ..., reasons: _Optional[_Iterable[str]] = ...) -> None: ...

class WalletBlocked(_message.Message):
    __slots__ = ("previous_status", "status_reason")
    PREVIOUS_STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_REASON_FIELD_NUMBER: _ClassVar[int]
    previous_status: str
    status_reason: str
    def __init__(self, previous_status: _Optional[str] = ..., status_reason: _Optional[str] = ...) -> None: ...

class WalletActivated(_message.Message):
    __slots__ = ("token", "selected_protocols", "principal", "allocation", "idle", "reactivation")
    class AllocationEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    SELECTED_PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    REACTIVATION_FIELD_NUMBER: _ClassVar[int]
    token: str
    selected_protocols: _containers.RepeatedScalarFieldContainer[str]
    principal: str
    allocation: _containers.ScalarMap[str, str]
    idle: str
    reactivation: bool
    def __init__(self, token: _Optional[str] = ..., selected_protocols: _Optional[_Iterable[str]] = ..., principal: _Optional[str] = ..., allocation: _Optional[_Mapping[str, str]] = ..., idle: _Optional[str] = ..., reactivation: _Optional[bool] = ...) -> None: ...

class DepositCredited(_message.Message):
    __slots__ = ("token", "amount", "tx_hash", "log_index", "block_number", "date")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    TX_HASH_FIELD_NUMBER: _ClassVar[int]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    BLOCK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    DATE_FIELD_NUMBER: _ClassVar[int]
    token: str
    amount: str
    tx_hash: str
    log_index: int
    block_number: int
    date: str
    def __init__(self, token: _Optional[str] = ..., amount: _Optional[str] = ..., tx_hash: _Optional[str] = ..., log_index: _Optional[int] = ..., block_number: _Optional[int] = ..., date: _Optional[str] = ...) -> None: ...

class RunMove(_message.Message):
    __slots__ = ("from_protocol", "to_protocol", "token", "amount", "tx_hash")
    FROM_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    TO_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    TX_HASH_FIELD_NUMBER: _ClassVar[int]
    from_protocol: str
    to_protocol: str
    token: str
    amount: str
    tx_hash: str
    def __init__(self, from_protocol: _Optional[str] = ..., to_protocol: _Optional[str] = ..., token: _Optional[str] = ..., amount: _Optional[str] = ..., tx_hash: _Optional[str] = ...) -> None: ...

class RunCompleted(_message.Message):
    __slots__ = ("run_id", "outcome", "reason", "moves")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MOVES_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    outcome: str
    reason: str
    moves: _containers.RepeatedCompositeFieldContainer[RunMove]
    def __init__(self, run_id: _Optional[str] = ..., outcome: _Optional[str] = ..., reason: _Optional[str] = ..., moves: _Optional[_Iterable[_Union[RunMove, _Mapping]]] = ...) -> None: ...

class Withdrawn(_message.Message):
    __slots__ = ("kind", "token", "amount", "principal_amount", "yield_amount", "fee_amount", "received_amount", "tx_hash", "log_index", "block_number", "date")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    YIELD_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    FEE_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    TX_HASH_FIELD_NUMBER: _ClassVar[int]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    BLOCK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    DATE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    token: str
    amount: str
    principal_amount: str
    yield_amount: str
    fee_amount: str
    received_amount: str
    tx_hash: str
    log_index: int
    block_number: int
    date: str
    def __init__(self, kind: _Optional[str] = ..., token: _Optional[str] = ..., amount: _Optional[str] = ..., principal_amount: _Optional[str] = ..., yield_amount: _Optional[str] = ..., fee_amount: _Optional[str] = ..., received_amount: _Optional[str] = ..., tx_hash: _Optional[str] = ..., log_index: _Optional[int] = ..., block_number: _Optional[int] = ..., date: _Optional[str] = ...) -> None: ...

class WalletDeactivated(_message.Message):
    __slots__ = ("token", "transfer", "idle")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    token: str
    transfer: bool
    idle: str
    def __init__(self, token: _Optional[str] = ..., transfer: _Optional[bool] = ..., idle: _Optional[str] = ...) -> None: ...

class RewardClaimed(_message.Message):
    __slots__ = ("token", "token_symbol", "amount", "decimals", "is_staked", "tx_hash", "date")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_SYMBOL_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    DECIMALS_FIELD_NUMBER: _ClassVar[int]
    IS_STAKED_FIELD_NUMBER: _ClassVar[int]
    TX_HASH_FIELD_NUMBER: _ClassVar[int]
    DATE_FIELD_NUMBER: _ClassVar[int]
    token: str
    token_symbol: str
    amount: str
    decimals: int
    is_staked: bool
    tx_hash: str
    date: str
    def __init__(self, token: _Optional[str] = ..., token_symbol: _Optional[str] = ..., amount: _Optional[str] = ..., decimals: _Optional[int] = ..., is_staked: _Optional[bool] = ..., tx_hash: _Optional[str] = ..., date: _Optional[str] = ...) -> None: ...
