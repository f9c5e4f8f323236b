"""Random requests for every RPC of every service, built by hypothesis from
the protobuf descriptors: each field gets hostile values of its type
(int32/int64 extremes, reserved and invalid names, valid-CRC hostile
batches) or arbitrary ones, repeated fields a few entries, nested messages
a few levels deep.

The verdict is the suite's own (harness.check_answer), with every Kafka
code allowed except UNKNOWN_SERVER_ERROR: an answer, never a handler that
raised (gRPC UNKNOWN/INTERNAL), never a node that stops serving.

`make test` runs a few examples per RPC, derandomized (seconds);
`make fuzz` sets KRAFTLOG_FUZZ_EXAMPLES for many random ones (minutes).
"""
from __future__ import annotations

import os

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devcluster.local_cluster import CLUSTER_ID

from . import batches
from .cases import CLUSTER_METADATA, CONSUMER_OFFSETS, INVALID_NAMES, TARGET_OF_SERVICE
from .harness import MODULES, Case, call, check_answer
from .world import DATA, GROUP, PAIR, World


EXAMPLES = int(os.environ.get("KRAFTLOG_FUZZ_EXAMPLES", "4"))
FUZZING = "KRAFTLOG_FUZZ_EXAMPLES" in os.environ
I32, I64 = (-2**31, 2**31 - 1), (-2**63, 2**63 - 1)
# The internal topics' names are tried everywhere: every request that could
# harm them (create, delete, grow, produce) must be refused.
STRINGS = [*INVALID_NAMES.values(), CLUSTER_METADATA, CONSUMER_OFFSETS, "PLAINTEXT", "retention.ms", "uniform"]
# Long polls may wait as long as they are told (Kafka's fetch does too): the
# deadline of this call is then the client's, not a fault of the server.
# Requests a server may hold until something happens; a classic JoinGroup/SyncGroup waits for the
# group's other members (up to the rebalance timeout, which the request itself may make huge).
LONG_POLLS = {"KafkaBroker/Fetch", "KRaftQuorum/Fetch", "GroupCoordinator/JoinGroup", "GroupCoordinator/SyncGroup"}
CALL_TIMEOUT_S = 10.0

# Counts are small (a random valid count would fill the shared cluster with
# partitions) or far over the controller's cap of 10,000 records a request,
# which must be refused whole.
SMALL_COUNTS = {"num_partitions", "count", "replication_factor"}
# Raft has no authentication: a request that names a real voter as its
# sender with a future epoch is obeyed, in Kafka too. Random senders are
# therefore never the cluster's voters (1-3), which the tables cover.
SENDERS = {"candidate_id", "leader_id", "replica_id", "destination_id"}
VOTERS = {1, 2, 3}
ADMIN_RPCS = {"CreateTopics", "DeleteTopics", "CreatePartitions", "ElectLeaders", "IncrementalAlterConfigs",
              "DeleteGroups", "OffsetCommit", "BrokerHeartbeat", "AlterPartition", "DeleteRecords",
              "AlterPartitionReassignments", "UnregisterBroker"}
# A random move onto the world's brokers, or their unregistration, would be obeyed
# (the tables cover those calls): random broker ids there are never theirs.
WORLD_BROKERS = {4, 5, 6}
MOVES = {"AlterPartitionReassignments", "UnregisterBroker"}


def ints(bounds: tuple[int, int]) -> st.SearchStrategy[int]:
    low, high = bounds
    return st.one_of(st.sampled_from([0, -1, 1, 2, 3, 99, low, high, low + 1, high - 1]), st.integers(low, high))


def strings(service: str, rpc: str) -> list[str]:
    """The names worth trying for this RPC: the data topics where a request
    only reads or appends (never where it could delete or reconfigure them),
    the real cluster id where a request is refused without it."""
    pool = list(STRINGS)
    if rpc not in ADMIN_RPCS:
        pool += [DATA, PAIR, GROUP]
    if service in ("KRaftQuorum", "KRaftController"):
        pool.append(CLUSTER_ID)
    return pool


def scalar(field: FieldDescriptor, service: str, rpc: str) -> st.SearchStrategy:
    name, t = field.name, field.type
    if name in SMALL_COUNTS:
        return st.one_of(st.integers(-3, 8), st.sampled_from([10_001, 100_000, I32[0], I32[1]]))
    if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_ENUM):
        values = ints(I32)
    elif t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64):
        values = ints(I64)
    elif t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    elif t == FieldDescriptor.TYPE_STRING:
        return st.one_of(st.sampled_from(strings(service, rpc)), st.text(max_size=24))
    elif t == FieldDescriptor.TYPE_BYTES:
        return st.one_of(st.sampled_from([b"", *batches.HOSTILE.values(), batches.good()]), st.binary(max_size=80))
    elif t == FieldDescriptor.TYPE_DOUBLE:  # quota values: NaN, infinities, zero, negatives, huge
        return st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                         st.sampled_from([0.0, -1.0, 1e308, float("nan"), float("inf")]))
    else:
        # No .proto of ours has another scalar type; a new one must get its strategy here.
        raise TypeError(f"{field.full_name}: no strategy for protobuf field type {t}")
    if service == "KRaftQuorum" and name in SENDERS:
        values = values.filter(lambda v: v not in VOTERS)
    if rpc in MOVES and name in ("ids", "broker_id"):
        values = values.filter(lambda v: v not in WORLD_BROKERS)
    return values


def message(descriptor: Descriptor, service: str, rpc: str, depth: int = 0) -> st.SearchStrategy[Message]:
    cls = message_factory.GetMessageClass(descriptor)
    parts: dict[str, st.SearchStrategy] = {}
    for field in descriptor.fields:
        if field.message_type is not None:
            if depth >= 3:
                continue
            value = message(field.message_type, service, rpc, depth + 1)
        else:
            value = scalar(field, service, rpc)
        if field.is_repeated:
            parts[field.name] = st.lists(value, max_size=3)
        elif field.has_presence:
            parts[field.name] = st.none() | value
        else:
            parts[field.name] = value

    def build(**values: object) -> Message:
        msg = cls()
        for name, value in values.items():
            field = descriptor.fields_by_name[name]
            if value is None:
                continue
            if field.is_repeated:
                getattr(msg, name).extend(value)
            elif field.message_type is not None:
                getattr(msg, name).CopyFrom(value)
            else:
                setattr(msg, name, value)
        return msg

    return st.builds(build, **parts)


RPCS = [(service, m) for service, module in MODULES.items()
        for m in module.DESCRIPTOR.services_by_name[service].methods]
ANY_KAFKA_CODE = frozenset(range(0, 200))


@pytest.mark.timeout(1800 if FUZZING else 300)
@pytest.mark.parametrize("service,rpc_method", RPCS, ids=[f"{s}/{m.name}" for s, m in RPCS])
def test_random_requests(world: World, service: str, rpc_method) -> None:
    rpc = f"{service}/{rpc_method.name}"
    case = Case(rpc, "random", b"", ANY_KAFKA_CODE, TARGET_OF_SERVICE[service])

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=not FUZZING, database=None,
              suppress_health_check=list(HealthCheck))
    @given(request=message(rpc_method.input_type, service, rpc_method.name))
    def one(request: Message) -> None:
        answer = call(world.channel_for(case.to), rpc, request, timeout=CALL_TIMEOUT_S)
        if isinstance(answer, grpc.RpcError):
            allowed = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}
            if rpc in LONG_POLLS:
                allowed.add(grpc.StatusCode.DEADLINE_EXCEEDED)
            assert answer.code() in allowed, (rpc, str(request)[:2000], answer.code(), answer.details())
            return
        check_answer(case, answer)  # any Kafka code, never UNKNOWN_SERVER_ERROR

    one()
    world.probe()
