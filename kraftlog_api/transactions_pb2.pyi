from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TxnTopic(_message.Message):
    __slots__ = ("name", "partitions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class AddPartitionsToTxnRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "topics", "verify_only")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    VERIFY_ONLY_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: _containers.RepeatedCompositeFieldContainer[TxnTopic]
    verify_only: bool
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[TxnTopic, _Mapping]]] = ..., verify_only: _Optional[bool] = ...) -> None: ...

class AddPartitionsToTxnResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "results", "throttle_time_ms")
    class PartitionResult(_message.Message):
        __slots__ = ("partition_index", "error_code")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: int
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[int] = ...) -> None: ...
    class TopicResult(_message.Message):
        __slots__ = ("name", "results")
        NAME_FIELD_NUMBER: _ClassVar[int]
        RESULTS_FIELD_NUMBER: _ClassVar[int]
        name: str
        results: _containers.RepeatedCompositeFieldContainer[AddPartitionsToTxnResponse.PartitionResult]
        def __init__(self, name: _Optional[str] = ..., results: _Optional[_Iterable[_Union[AddPartitionsToTxnResponse.PartitionResult, _Mapping]]] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    results: _containers.RepeatedCompositeFieldContainer[AddPartitionsToTxnResponse.TopicResult]
    throttle_time_ms: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[AddPartitionsToTxnResponse.TopicResult, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class AddOffsetsToTxnRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "group_id")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., group_id: _Optional[str] = ...) -> None: ...

class AddOffsetsToTxnResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "throttle_time_ms")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    throttle_time_ms: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class EndTxnRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "committed", "keep_epoch")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    KEEP_EPOCH_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    keep_epoch: bool
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., committed: _Optional[bool] = ..., keep_epoch: _Optional[bool] = ...) -> None: ...

class EndTxnResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "producer_id", "producer_epoch", "throttle_time_ms")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    producer_id: int
    producer_epoch: int
    throttle_time_ms: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class DescribeTransactionsRequest(_message.Message):
    __slots__ = ("transactional_ids",)
    TRANSACTIONAL_IDS_FIELD_NUMBER: _ClassVar[int]
    transactional_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, transactional_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeTransactionsResponse(_message.Message):
    __slots__ = ("transaction_states", "throttle_time_ms")
    class TransactionState(_message.Message):
        __slots__ = ("error_code", "transactional_id", "transaction_state", "transaction_timeout_ms", "transaction_start_time_ms", "producer_id", "producer_epoch", "topics", "coordinator_id")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_STATE_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        TOPICS_FIELD_NUMBER: _ClassVar[int]
        COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        transactional_id: str
        transaction_state: str
        transaction_timeout_ms: int
        transaction_start_time_ms: int
        producer_id: int
        producer_epoch: int
        topics: _containers.RepeatedCompositeFieldContainer[TxnTopic]
        coordinator_id: int
        def __init__(self, error_code: _Optional[int] = ..., transactional_id: _Optional[str] = ..., transaction_state: _Optional[str] = ..., transaction_timeout_ms: _Optional[int] = ..., transaction_start_time_ms: _Optional[int] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[TxnTopic, _Mapping]]] = ..., coordinator_id: _Optional[int] = ...) -> None: ...
    TRANSACTION_STATES_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    transaction_states: _containers.RepeatedCompositeFieldContainer[DescribeTransactionsResponse.TransactionState]
    throttle_time_ms: int
    def __init__(self, transaction_states: _Optional[_Iterable[_Union[DescribeTransactionsResponse.TransactionState, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class ListTransactionsRequest(_message.Message):
    __slots__ = ("state_filters", "producer_id_filters", "duration_filter_ms")
    STATE_FILTERS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FILTERS_FIELD_NUMBER: _ClassVar[int]
    DURATION_FILTER_MS_FIELD_NUMBER: _ClassVar[int]
    state_filters: _containers.RepeatedScalarFieldContainer[str]
    producer_id_filters: _containers.RepeatedScalarFieldContainer[int]
    duration_filter_ms: int
    def __init__(self, state_filters: _Optional[_Iterable[str]] = ..., producer_id_filters: _Optional[_Iterable[int]] = ..., duration_filter_ms: _Optional[int] = ...) -> None: ...

class ListTransactionsResponse(_message.Message):
    __slots__ = ("error_code", "unknown_state_filters", "transaction_states", "throttle_time_ms")
    class TransactionState(_message.Message):
        __slots__ = ("transactional_id", "producer_id", "transaction_state")
        TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_STATE_FIELD_NUMBER: _ClassVar[int]
        transactional_id: str
        producer_id: int
        transaction_state: str
        def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., transaction_state: _Optional[str] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_STATE_FILTERS_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_STATES_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    unknown_state_filters: _containers.RepeatedScalarFieldContainer[str]
    transaction_states: _containers.RepeatedCompositeFieldContainer[ListTransactionsResponse.TransactionState]
    throttle_time_ms: int
    def __init__(self, error_code: _Optional[int] = ..., unknown_state_filters: _Optional[_Iterable[str]] = ..., transaction_states: _Optional[_Iterable[_Union[ListTransactionsResponse.TransactionState, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...
