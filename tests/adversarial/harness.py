"""The adversarial suite's machinery: Kafka's error codes, the case record,
one checker for every case, and the probes that show a cluster unharmed.

A case is data: the RPC, a request (or a function of the World building it
from live state: topic ids, broker epochs, a member's epoch), the node it
goes to and the answers allowed. `check` sends it and asserts

- the answer is a Kafka error code from the allowed set in every
  `error_code` of the response (never UNKNOWN_SERVER_ERROR), or, for
  framing a handler never saw, the allowed gRPC status - never UNKNOWN or
  INTERNAL, which are a handler that raised;
- nothing changed: the metadata every broker serves, the data topics' log
  ends, the reference group's committed offsets and the quorum's voters are
  what they were (a case that may change them says so and retakes the
  reference);
- the quorum is still in the epoch it was in (for KRaftQuorum requests);
- the node that got it still serves.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Optional, Union

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, MethodDescriptor
from google.protobuf.message import Message

from kafka_protocol.errors import Errors
from devcluster.local_processes import wait_until
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import quorum_pb2 as qpb
from kraftlog_api import transactions_pb2 as tpb


# Kafka's protocol error codes by Kafka's names, as the suite's cases write them.
K = Errors


# Every service and where it is served: brokers (KafkaBroker,
# GroupCoordinator, TransactionCoordinator), controllers (KRaftController, KRaftQuorum), and a
# records-only quorum (QuorumLog, which controllers of a cluster do not serve).
MODULES = {"KafkaBroker": bpb, "GroupCoordinator": gpb, "TransactionCoordinator": tpb, "KRaftController": cpb,
           "KRaftQuorum": qpb, "QuorumLog": qpb}
FULL_NAMES = {name: module.DESCRIPTOR.services_by_name[name].full_name for name, module in MODULES.items()}
# Statuses a well-behaved server may end a call with: a request it could not
# decode or that names nothing it could act on, one over the size limit, a
# method not served on that listener, a broker still catching up.
CLEAN_STATUSES = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED,
                  grpc.StatusCode.UNIMPLEMENTED}
RETRIABLE = {K.NOT_CONTROLLER, K.REQUEST_TIMED_OUT}
CALL_TIMEOUT_S = 30.0


def method(rpc: str) -> MethodDescriptor:
    service, name = rpc.split("/")
    return MODULES[service].DESCRIPTOR.services_by_name[service].methods_by_name[name]


def request_class(rpc: str) -> type[Message]:
    return message_factory.GetMessageClass(method(rpc).input_type)


def response_class(rpc: str) -> type[Message]:
    return message_factory.GetMessageClass(method(rpc).output_type)


Request = Union[Message, bytes, Callable[[Any], Union[Message, bytes]]]
Expect = Union[frozenset[int], grpc.StatusCode]


@dataclasses.dataclass(frozen=True)
class Case:
    """One hostile request. `to` names a target World.channel_for resolves
    ("broker", "leader", "pair-leader", "pair-follower", "outsider",
    "coordinator", "non-coordinator", "coordinator-of:GROUP", "txn-coordinator-of:ID",
    "txn-non-coordinator-of:ID", "data-follower", "controller",
    "quorum-leader", "quorum-follower", "records-quorum"); `expect` is the Kafka codes allowed in the answer (a
    set) or the gRPC status it must end with; `effect` allows the request to
    change what the reference snapshot holds; `xfail` marks a known bug
    being fixed on another branch."""
    rpc: str
    name: str
    request: Request
    expect: Expect
    to: str = "broker"
    effect: bool = False
    xfail: str = ""
    # Known today to hang or stall a node, or to wreck what later cases
    # stand on (deleting __consumer_offsets): not run on the shared cluster;
    # the branch with the fix runs it.
    harms: bool = False

    @property
    def id(self) -> str:
        return f"{self.rpc.split('/')[1]}-{self.name}"


def codes(*names: K) -> frozenset[int]:
    return frozenset(int(n) for n in names)


@dataclasses.dataclass(frozen=True)
class _CodePlan:
    """Where a message type's `error_code`s are: its own, and the message
    fields (singular and repeated) whose types hold one at some depth. A
    response of 100000 results is walked by this plan, not field by field."""
    has_code: bool
    singles: tuple[tuple[str, "_CodePlan"], ...]
    repeats: tuple[tuple[str, "_CodePlan"], ...]


@functools.cache
def _code_plan(descriptor: Descriptor, outer: frozenset[str] = frozenset()) -> Optional[_CodePlan]:
    """None when the type holds no error_code at any depth."""
    if descriptor.full_name in outer:
        raise ValueError(f"{descriptor.full_name} contains itself: walk it field by field")
    inner = outer | {descriptor.full_name}
    singles, repeats = [], []
    for field in descriptor.fields:
        plan = _code_plan(field.message_type, inner) if field.message_type is not None else None
        if plan is not None:
            (repeats if field.is_repeated else singles).append((field.name, plan))
    has_code = "error_code" in descriptor.fields_by_name
    if not (has_code or singles or repeats):
        return None
    return _CodePlan(has_code, tuple(singles), tuple(repeats))


def _collect_codes(message: Message, plan: _CodePlan, into: set[int]) -> None:
    if plan.has_code:
        into.add(message.error_code)
    for name, inner in plan.singles:
        if message.HasField(name):
            _collect_codes(getattr(message, name), inner, into)
    for name, inner in plan.repeats:
        items = getattr(message, name)
        if not items:
            continue
        if inner.has_code:
            into.update(item.error_code for item in items)
        if inner.singles or inner.repeats:
            for item in items:
                for nested, deeper in inner.repeats:
                    if getattr(item, nested):
                        for sub in getattr(item, nested):
                            _collect_codes(sub, deeper, into)
                for nested, deeper in inner.singles:
                    if item.HasField(nested):
                        _collect_codes(getattr(item, nested), deeper, into)


def answer_codes(message: Message) -> set[int]:
    """The response's non-zero codes (every `error_code`, however deeply nested), or {0} when all is well."""
    found: set[int] = set()
    plan = _code_plan(message.DESCRIPTOR)
    if plan is not None:
        _collect_codes(message, plan, found)
    return (found - {0}) or {0}


def call(channel: grpc.Channel, rpc: str, request: Union[Message, bytes], timeout: float = CALL_TIMEOUT_S
         ) -> Union[Message, grpc.RpcError]:
    """One unary call with plain protobuf (de)serialisation; the answer or the gRPC error."""
    service, name = rpc.split("/")
    stub = channel.unary_unary(f"/{FULL_NAMES[service]}/{name}", request_serializer=_serialize,
                               response_deserializer=response_class(rpc).FromString)
    try:
        return stub(request, timeout=timeout)
    except grpc.RpcError as exc:
        return exc


def _serialize(request: Union[Message, bytes]) -> bytes:
    return request if isinstance(request, bytes) else request.SerializeToString()


def describe(answer: Union[Message, grpc.RpcError]) -> str:
    if isinstance(answer, grpc.RpcError):
        return f"gRPC {answer.code().name}: {answer.details()}"
    names = {c: K(c).name if c in K._value2member_map_ else str(c) for c in answer_codes(answer)}
    return f"{sorted(names.values())} in {str(answer)[:600]}"


def check_answer(case: Case, answer: Union[Message, grpc.RpcError]) -> None:
    """The one verdict on an answer, for the tables and the fuzzer alike."""
    if isinstance(case.expect, grpc.StatusCode):
        assert isinstance(answer, grpc.RpcError) and answer.code() == case.expect, (case.id, describe(answer))
        return
    assert not isinstance(answer, grpc.RpcError), (case.id, describe(answer))
    got = answer_codes(answer)
    assert K.UNKNOWN_SERVER_ERROR not in got, (case.id, describe(answer))
    assert got <= case.expect, (case.id, sorted(case.expect), describe(answer))


def send(world: Any, case: Case) -> Union[Message, grpc.RpcError]:
    """The case's request to its target, retried (boundedly) while the controller is moving."""
    request = case.request(world) if callable(case.request) else case.request

    def answered() -> Optional[Union[Message, grpc.RpcError]]:
        answer = call(world.channel_for(case.to), case.rpc, request)
        if case.to == "controller" and not isinstance(answer, grpc.RpcError):
            if getattr(answer, "error_code", 0) == K.NOT_CONTROLLER:
                world.forget_controller()
                return None
        if (not isinstance(answer, grpc.RpcError) and case.rpc.startswith("KafkaBroker/")
                and getattr(answer, "error_code", 0) in RETRIABLE):
            return None  # forwarded admin request that met no controller: ask again
        return answer

    return wait_until(answered, 60, f"{case.id}: an answer from the controller", interval=0.2)


def check(world: Any, case: Case) -> None:
    """Send one case and assert every property the suite promises for it."""
    # A quorum request from a non-voter, with a future epoch or a stale one,
    # must not move the quorum to another epoch (nor, with it, the leader).
    epoch = world.quorum_epoch() if case.rpc.startswith("KRaftQuorum/") else None
    answer = send(world, case)
    check_answer(case, answer)
    if epoch is not None:
        assert world.quorum_epoch() == epoch, f"{case.id}: the quorum left epoch {epoch}"
    if case.effect:
        world.retake_reference()
    else:
        world.assert_unchanged(case.id)
