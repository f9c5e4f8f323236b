from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EpochEndOffset(_message.Message):
    __slots__ = ("epoch", "end_offset")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    end_offset: int
    def __init__(self, epoch: _Optional[int] = ..., end_offset: _Optional[int] = ...) -> None: ...

class SnapshotId(_message.Message):
    __slots__ = ("end_offset", "epoch")
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    end_offset: int
    epoch: int
    def __init__(self, end_offset: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class Entry(_message.Message):
    __slots__ = ("epoch", "data", "control")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    data: bytes
    control: bool
    def __init__(self, epoch: _Optional[int] = ..., data: _Optional[bytes] = ..., control: _Optional[bool] = ...) -> None: ...

class VoteRequest(_message.Message):
    __slots__ = ("cluster_id", "destination_id", "candidate_epoch", "candidate_id", "last_offset_epoch", "last_offset", "pre_vote", "candidate_directory_id", "voter_directory_id")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_ID_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_OFFSET_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    PRE_VOTE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    destination_id: int
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool
    candidate_directory_id: str
    voter_directory_id: str
    def __init__(self, cluster_id: _Optional[str] = ..., destination_id: _Optional[int] = ..., candidate_epoch: _Optional[int] = ..., candidate_id: _Optional[int] = ..., last_offset_epoch: _Optional[int] = ..., last_offset: _Optional[int] = ..., pre_vote: _Optional[bool] = ..., candidate_directory_id: _Optional[str] = ..., voter_directory_id: _Optional[str] = ...) -> None: ...

class VoteResponse(_message.Message):
    __slots__ = ("error_code", "leader_epoch", "leader_id", "vote_granted", "pre_vote")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTE_GRANTED_FIELD_NUMBER: _ClassVar[int]
    PRE_VOTE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_epoch: int
    leader_id: int
    vote_granted: bool
    pre_vote: bool
    def __init__(self, error_code: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., vote_granted: _Optional[bool] = ..., pre_vote: _Optional[bool] = ...) -> None: ...

class BeginQuorumEpochRequest(_message.Message):
    __slots__ = ("cluster_id", "destination_id", "leader_epoch", "leader_id", "voter_directory_id")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    destination_id: int
    leader_epoch: int
    leader_id: int
    voter_directory_id: str
    def __init__(self, cluster_id: _Optional[str] = ..., destination_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., voter_directory_id: _Optional[str] = ...) -> None: ...

class BeginQuorumEpochResponse(_message.Message):
    __slots__ = ("error_code", "leader_epoch", "leader_id")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_epoch: int
    leader_id: int
    def __init__(self, error_code: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., leader_id: _Optional[int] = ...) -> None: ...

class EndQuorumEpochRequest(_message.Message):
    __slots__ = ("cluster_id", "destination_id", "leader_epoch", "leader_id", "preferred_successors")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_SUCCESSORS_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    destination_id: int
    leader_epoch: int
    leader_id: int
    preferred_successors: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, cluster_id: _Optional[str] = ..., destination_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., preferred_successors: _Optional[_Iterable[int]] = ...) -> None: ...

class EndQuorumEpochResponse(_message.Message):
    __slots__ = ("error_code", "leader_epoch", "leader_id")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_epoch: int
    leader_id: int
    def __init__(self, error_code: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., leader_id: _Optional[int] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("cluster_id", "destination_id", "replica_id", "current_leader_epoch", "fetch_offset", "last_fetched_epoch", "max_wait_ms", "replica_directory_id")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCHED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    destination_id: int
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int
    replica_directory_id: str
    def __init__(self, cluster_id: _Optional[str] = ..., destination_id: _Optional[int] = ..., replica_id: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., last_fetched_epoch: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., replica_directory_id: _Optional[str] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("error_code", "leader_epoch", "leader_id", "high_watermark", "log_start_offset", "base_offset", "records", "diverging_epoch", "snapshot_id")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    BASE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    DIVERGING_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_epoch: int
    leader_id: int
    high_watermark: int
    log_start_offset: int
    base_offset: int
    records: _containers.RepeatedCompositeFieldContainer[Entry]
    diverging_epoch: EpochEndOffset
    snapshot_id: SnapshotId
    def __init__(self, error_code: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., high_watermark: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., base_offset: _Optional[int] = ..., records: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., diverging_epoch: _Optional[_Union[EpochEndOffset, _Mapping]] = ..., snapshot_id: _Optional[_Union[SnapshotId, _Mapping]] = ...) -> None: ...

class FetchSnapshotRequest(_message.Message):
    __slots__ = ("cluster_id", "destination_id", "replica_id", "current_leader_epoch", "snapshot_id", "position", "max_bytes", "replica_directory_id")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    REPLICA_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    destination_id: int
    replica_id: int
    current_leader_epoch: int
    snapshot_id: SnapshotId
    position: int
    max_bytes: int
    replica_directory_id: str
    def __init__(self, cluster_id: _Optional[str] = ..., destination_id: _Optional[int] = ..., replica_id: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., snapshot_id: _Optional[_Union[SnapshotId, _Mapping]] = ..., position: _Optional[int] = ..., max_bytes: _Optional[int] = ..., replica_directory_id: _Optional[str] = ...) -> None: ...

class FetchSnapshotResponse(_message.Message):
    __slots__ = ("error_code", "leader_epoch", "leader_id", "snapshot_id", "size", "position", "unaligned_records")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    UNALIGNED_RECORDS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_epoch: int
    leader_id: int
    snapshot_id: SnapshotId
    size: int
    position: int
    unaligned_records: bytes
    def __init__(self, error_code: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., snapshot_id: _Optional[_Union[SnapshotId, _Mapping]] = ..., size: _Optional[int] = ..., position: _Optional[int] = ..., unaligned_records: _Optional[bytes] = ...) -> None: ...

class DescribeQuorumRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReplicaState(_message.Message):
    __slots__ = ("replica_id", "log_end_offset", "last_fetch_timestamp", "last_caught_up_timestamp", "replica_directory_id")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCH_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    LAST_CAUGHT_UP_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    REPLICA_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int
    replica_directory_id: str
    def __init__(self, replica_id: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., last_fetch_timestamp: _Optional[int] = ..., last_caught_up_timestamp: _Optional[int] = ..., replica_directory_id: _Optional[str] = ...) -> None: ...

class DescribeQuorumResponse(_message.Message):
    __slots__ = ("error_code", "leader_id", "leader_epoch", "high_watermark", "current_voters", "observers", "nodes")
    class Node(_message.Message):
        __slots__ = ("node_id", "listeners")
        NODE_ID_FIELD_NUMBER: _ClassVar[int]
        LISTENERS_FIELD_NUMBER: _ClassVar[int]
        node_id: int
        listeners: _containers.RepeatedCompositeFieldContainer[DescribeQuorumResponse.Listener]
        def __init__(self, node_id: _Optional[int] = ..., listeners: _Optional[_Iterable[_Union[DescribeQuorumResponse.Listener, _Mapping]]] = ...) -> None: ...
    class Listener(_message.Message):
        __slots__ = ("name", "host", "port")
        NAME_FIELD_NUMBER: _ClassVar[int]
        HOST_FIELD_NUMBER: _ClassVar[int]
        PORT_FIELD_NUMBER: _ClassVar[int]
        name: str
        host: str
        port: int
        def __init__(self, name: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    CURRENT_VOTERS_FIELD_NUMBER: _ClassVar[int]
    OBSERVERS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_id: int
    leader_epoch: int
    high_watermark: int
    current_voters: _containers.RepeatedCompositeFieldContainer[ReplicaState]
    observers: _containers.RepeatedCompositeFieldContainer[ReplicaState]
    nodes: _containers.RepeatedCompositeFieldContainer[DescribeQuorumResponse.Node]
    def __init__(self, error_code: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., high_watermark: _Optional[int] = ..., current_voters: _Optional[_Iterable[_Union[ReplicaState, _Mapping]]] = ..., observers: _Optional[_Iterable[_Union[ReplicaState, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[DescribeQuorumResponse.Node, _Mapping]]] = ...) -> None: ...

class VoterEndpoint(_message.Message):
    __slots__ = ("name", "host", "port")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    host: str
    port: int
    def __init__(self, name: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class AddRaftVoterRequest(_message.Message):
    __slots__ = ("cluster_id", "timeout_ms", "voter_id", "voter_directory_id", "listeners")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    VOTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    LISTENERS_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    timeout_ms: int
    voter_id: int
    voter_directory_id: str
    listeners: _containers.RepeatedCompositeFieldContainer[VoterEndpoint]
    def __init__(self, cluster_id: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., voter_id: _Optional[int] = ..., voter_directory_id: _Optional[str] = ..., listeners: _Optional[_Iterable[_Union[VoterEndpoint, _Mapping]]] = ...) -> None: ...

class RemoveRaftVoterRequest(_message.Message):
    __slots__ = ("cluster_id", "voter_id", "voter_directory_id")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    voter_id: int
    voter_directory_id: str
    def __init__(self, cluster_id: _Optional[str] = ..., voter_id: _Optional[int] = ..., voter_directory_id: _Optional[str] = ...) -> None: ...

class UpdateRaftVoterRequest(_message.Message):
    __slots__ = ("cluster_id", "voter_id", "voter_directory_id", "listeners")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    LISTENERS_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    voter_id: int
    voter_directory_id: str
    listeners: _containers.RepeatedCompositeFieldContainer[VoterEndpoint]
    def __init__(self, cluster_id: _Optional[str] = ..., voter_id: _Optional[int] = ..., voter_directory_id: _Optional[str] = ..., listeners: _Optional[_Iterable[_Union[VoterEndpoint, _Mapping]]] = ...) -> None: ...

class RaftVoterChangeResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "leader_id", "leader_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    leader_id: int
    leader_epoch: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class AppendRequest(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, records: _Optional[_Iterable[bytes]] = ...) -> None: ...

class AppendResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "leader_id", "leader_epoch", "base_offset", "last_offset")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BASE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    leader_id: int
    leader_epoch: int
    base_offset: int
    last_offset: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., base_offset: _Optional[int] = ..., last_offset: _Optional[int] = ...) -> None: ...

class ReadCommittedRequest(_message.Message):
    __slots__ = ("start_offset", "max_records")
    START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_RECORDS_FIELD_NUMBER: _ClassVar[int]
    start_offset: int
    max_records: int
    def __init__(self, start_offset: _Optional[int] = ..., max_records: _Optional[int] = ...) -> None: ...

class CommittedRecord(_message.Message):
    __slots__ = ("offset", "data")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    offset: int
    data: bytes
    def __init__(self, offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class ReadCommittedResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "records", "high_watermark", "next_offset")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    records: _containers.RepeatedCompositeFieldContainer[CommittedRecord]
    high_watermark: int
    next_offset: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., records: _Optional[_Iterable[_Union[CommittedRecord, _Mapping]]] = ..., high_watermark: _Optional[int] = ..., next_offset: _Optional[int] = ...) -> None: ...
