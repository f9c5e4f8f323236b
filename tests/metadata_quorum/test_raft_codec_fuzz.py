"""Whatever arrives over gRPC, the codec either refuses it by name or hands the core something it can answer.

Two kinds of input: random bytes parsed as each request type, and requests
built field by field from the .proto with values near the ones a small
quorum uses (plus the extremes), so that the core's own checks, and what
lies past them, are reached. A request the codec lets through is stepped
into cores in every election state: the core must not raise, must answer
at most once, and its answer must go back onto the wire.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kraftlog_api import quorum_pb2 as pb
from metadata_quorum import raft_codec
from metadata_quorum.raft import RaftCore

from .helpers import CLUSTER, drain, make_core
from .test_bad_requests import follower, observer
from .test_bad_requests import leader as leader_with_entries

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REFUSALS = (raft_codec.MalformedRequest, raft_codec.MisroutedRequest)
METHODS = list(raft_codec.METHODS)

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Mostly the ids of the cores below; the rest probe the edges.
# Well-formed base64url UUIDs (AAAAAAAAAAAAAAAAAAAAAA is Kafka's zero Uuid) and "" for a replica without one.
DIRECTORY_ID = st.sampled_from(["", "AAAAAAAAAAAAAAAAAAAAAA", "Vd6QmL4OTnKTYXYRJ7Ckzw", "q9ZXaRlYR2y3uNw5eV1ZCA"])
NODE_ID = st.sampled_from([1, 2, 3, 9] * 3 + [-1, 0, 4, INT32_MIN, INT32_MAX])


def near(value: int, low: int, high: int) -> st.SearchStrategy:
    """Mostly `value`, so a request gets past the core's first checks; else its neighbours or the edges."""
    return st.sampled_from([value] * 4 + [value - 1, value + 1, 0, -1, low, high])


# --- cores in every election state ------------------------------------------------


def leader() -> RaftCore:
    """Node 1 leads epoch 1 from snapshot (2, 1): its log holds only offset 2, and 2 is committed."""
    core = leader_with_entries()
    core.create_snapshot(2, b"snapshot")
    drain(core)
    return core


def resigned() -> RaftCore:
    core = leader()
    core.resign()
    drain(core)
    return core


def prospective() -> RaftCore:
    core = make_core(node_id=3)
    core.campaign()
    drain(core)
    return core


# The leader serves the most, so it gets the most requests.
CORES: list[Callable[[], RaftCore]] = [leader] * 4 + [resigned, follower, prospective, make_core, observer]


# --- requests built from the .proto ---------------------------------------------


def values_for(core: RaftCore) -> dict[str, st.SearchStrategy]:
    """Field values (by protobuf field name) that fit the receiving core's epoch, log and snapshot."""
    epoch, log = core.epoch(), core.log
    snapshot = core.snapshot.snapshot_id if core.snapshot is not None else (1, 1)
    return {
        "cluster_id": st.sampled_from([CLUSTER] * 4 + ["other"]),
        # Absent: for whoever gets it (random bytes and test_raft_codec cover misrouting).
        "destination_id": st.none(),
        "candidate_epoch": near(epoch + 1, INT32_MIN, INT32_MAX),
        "leader_epoch": near(epoch, INT32_MIN, INT32_MAX),
        "current_leader_epoch": near(epoch, INT32_MIN, INT32_MAX),
        "last_offset_epoch": near(log.last_epoch, INT32_MIN, INT32_MAX),
        "last_fetched_epoch": near(log.last_epoch, INT32_MIN, INT32_MAX),
        "last_offset": near(log.end_offset, INT64_MIN, INT64_MAX),
        "fetch_offset": near(log.end_offset, INT64_MIN, INT64_MAX),
        "snapshot_id": st.builds(
            pb.SnapshotId, end_offset=near(snapshot[0], INT64_MIN, INT64_MAX), epoch=near(snapshot[1], -1, 2)
        ),
        "position": near(1, INT64_MIN, INT64_MAX),
        "max_bytes": near(3, INT32_MIN, INT32_MAX),
        "max_wait_ms": near(0, INT32_MIN, INT32_MAX),
    }


def field_values(field: FieldDescriptor, by_name: dict[str, st.SearchStrategy]) -> st.SearchStrategy:
    if field.name in by_name:
        return by_name[field.name]
    if field.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if field.type == FieldDescriptor.TYPE_STRING:  # KIP-853 directory ids: "" (unknown), well-formed or garbage
        return st.one_of(DIRECTORY_ID, st.text(max_size=30))
    if field.name.endswith("_id") or field.name == "preferred_successors":
        return NODE_ID
    if field.type == FieldDescriptor.TYPE_INT64:
        return st.integers(INT64_MIN, INT64_MAX)
    return st.integers(INT32_MIN, INT32_MAX)


def pb_messages(cls: type, by_name: dict[str, st.SearchStrategy]) -> st.SearchStrategy:
    """Messages of `cls` with every field drawn from field_values (None leaves a field unset)."""
    fields = {}
    for field in cls.DESCRIPTOR.fields:
        values = field_values(field, by_name)
        fields[field.name] = st.lists(values, max_size=4) if field.is_repeated else values
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))


# --- the property -----------------------------------------------------------------


def arrives(method: str, msg: Any, core: RaftCore) -> None:
    """The codec refuses `msg` by name, or the core takes it and answers at most once, in protobuf."""
    try:
        req = raft_codec.request_from_proto(method, msg, receiver_id=core.node_id, correlation_id=77)
    except REFUSALS as refusal:
        event(type(refusal).__name__)
        return
    assert isinstance(req, raft_codec.METHODS[method].request)
    core.step(req, 0)
    answers = [m for r in drain(core) for m in r.messages if (m.dst, m.correlation_id) == (req.src, 77)]
    assert len(answers) <= 1, answers
    event(f"{method}: {answers[0].error.name if answers else 'no answer yet'}")
    for answer in answers:
        assert isinstance(answer, raft_codec.METHODS[method].response)
        raft_codec.response_to_proto(answer).SerializeToString()


@pytest.mark.parametrize("method", METHODS)
@FUZZ
@given(data=st.binary(max_size=120), make=st.sampled_from(CORES))
def test_random_bytes(method: str, data: bytes, make: Callable[[], RaftCore]) -> None:
    try:
        msg = raft_codec.METHODS[method].request_pb.FromString(data)
    except DecodeError:
        return
    arrives(method, msg, make())


@FUZZ
@given(data=st.data(), make=st.sampled_from(CORES))
def test_requests_built_from_the_proto(data: st.DataObject, make: Callable[[], RaftCore]) -> None:
    core = make()
    method = data.draw(st.sampled_from(METHODS))
    arrives(method, data.draw(pb_messages(raft_codec.METHODS[method].request_pb, values_for(core))), core)
