"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)
of one group, pure: requests and the time come in; the answers due and
whether the group's record must be written come out. The machine
(machine.py) finds the group and writes the record; the shell holds each
waiting request's answer under a token and resolves it when the answer
comes out, possibly in the outcome of another member's request or of a timer.

The rules are Kafka's (its GroupMetadataManager for classic groups):
- Empty -> PreparingRebalance when a member joins; the join phase ends when
  every member rejoined (and no member id handed out with MEMBER_ID_REQUIRED
  is still outstanding) or when the rebalance timeout (the members' largest)
  passes. The first rebalance of an empty group waits
  group.initial.rebalance.delay.ms, extended while members keep joining, up
  to the rebalance timeout. Dynamic members that did not rejoin are removed.
- Completing the join phase bumps the generation, picks the protocol (the
  assignor) every member supports that most members prefer, and answers
  every join: the leader gets each member's metadata, assigns client-side,
  and its SyncGroup hands the assignments out -> Stable. Members that do
  not SyncGroup within the rebalance timeout are removed (a new rebalance).
- A member's session expires when it sends nothing for its
  session.timeout.ms, except while its join or sync waits for the group.
- Static members (group.instance.id) keep their place across restarts: a
  new member id for a known instance replaces the old member (whose
  waiting requests are answered FENCED_INSTANCE_ID) without a rebalance of
  a Stable group unless the group's protocol would change (a restarted
  leader gets the members with skip_assignment, KIP-814); a request naming
  the instance with another member id is FENCED_INSTANCE_ID.
- The group's record (records.ClassicGroupRecord, Kafka's GroupMetadataValue)
  is a snapshot written when an assignment is set, when a static member is
  replaced and when the group becomes empty; loading makes a group with
  members Stable (their sessions start again), as Kafka's loader does.

Not kept: Kafka's Dead state (a group with nothing left is simply gone).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, NamedTuple, Optional

from kraftlog_api import groups_pb2 as gpb

from ..errors import Error
from .records import ClassicGroupRecord, ClassicMemberRecord, Key, RecordType, encode_key, encode_value

Token = int  # the shell's handle on a waiting request
Answer = tuple[Token, object]  # a token and the protobuf answer due to it


class Now(NamedTuple):
    """The time of one call, on both of the node's clocks
    (partition_log/clock.py): `ms` on the monotonic clock for every deadline
    (sessions, join and sync phases, rebalance delays), `wall_ms` on the
    wall clock for what is written (a classic group's state timestamp).
    A wall clock that jumps moves no deadline."""

    ms: int
    wall_ms: int


class ClassicState(str, Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"


@dataclass(frozen=True)
class ClassicConfig:
    min_session_timeout_ms: int = 6000      # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000   # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    max_size: int = 2**31 - 1               # group.classic.max.size
    max_record_bytes: int = 1048588         # the offsets topic's max.message.bytes: a group's record must fit


BATCH_OVERHEAD = 100  # a batch's header and one record's framing, at most


@dataclass(slots=True)
class ClassicMember:
    member_id: str
    instance_id: Optional[str]
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]  # (name, metadata), the member's preference first
    assignment: bytes = b""
    join_token: Optional[Token] = None  # its JoinGroup waits for the join phase
    sync_token: Optional[Token] = None  # its SyncGroup waits for the leader's
    session_deadline_ms: Optional[int] = None

    def metadata(self, protocol: Optional[str]) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")


@dataclass(slots=True)
class ClassicGroup:
    group_id: str
    protocol_type: Optional[str] = None
    generation: int = 0
    protocol_name: Optional[str] = None
    leader: Optional[str] = None
    state: ClassicState = ClassicState.EMPTY
    state_timestamp_ms: int = -1
    members: dict[str, ClassicMember] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)  # ids handed out with MEMBER_ID_REQUIRED -> deadline
    deadline_ms: Optional[int] = None  # the join phase's end, or the sync's (CompletingRebalance)
    initial_limit_ms: Optional[int] = None  # the initial delayed join: its latest end
    joined_during_delay: bool = False

    @classmethod
    def from_record(cls, group_id: str, record: ClassicGroupRecord) -> "ClassicGroup":
        group = cls(group_id, record.protocol_type, record.generation, record.protocol, record.leader,
                    ClassicState.STABLE if record.members else ClassicState.EMPTY, record.state_timestamp_ms)
        for m in record.members:
            group.members[m.member_id] = ClassicMember(
                m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                m.session_timeout_ms, ((record.protocol or "", m.subscription),), m.assignment)
        return group

    def record(self) -> ClassicGroupRecord:
        return ClassicGroupRecord(
            self.protocol_type or "", self.generation, self.protocol_name, self.leader, self.state_timestamp_ms,
            tuple(ClassicMemberRecord(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                      m.session_timeout_ms, m.metadata(self.protocol_name), m.assignment)
                  for m in self.members.values()))

    def static_member(self, instance_id: Optional[str]) -> Optional[ClassicMember]:
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def candidates(self) -> set[str]:
        """The protocols every member supports."""
        counts = Counter(name for m in self.members.values() for name, _ in m.protocols)
        return {name for name, n in counts.items() if n == len(self.members)}

    def deadlines(self) -> list[int]:
        out = [d for d in self.pending.values()]
        out += [m.session_deadline_ms for m in self.members.values() if m.session_deadline_ms is not None]
        if self.deadline_ms is not None:
            out.append(self.deadline_ms)
        return out


class GroupError(Exception):
    """A request refused: Kafka's error code and why."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ClassicRules:
    """The protocol over ClassicGroups. Each call leaves the answers it made
    in `answers` (taken by the machine) and returns whether the group's
    record must be written."""

    def __init__(self, config: ClassicConfig, new_id: Callable[[], str]) -> None:
        self.config = config
        self.new_id = new_id
        self.answers: list[Answer] = []

    def take_answers(self) -> list[Answer]:
        answers, self.answers = self.answers, []
        return answers

    # -- JoinGroup -------------------------------------------------------------------------------
    def check_join(self, req: gpb.JoinGroupRequest) -> None:
        if not (self.config.min_session_timeout_ms <= req.session_timeout_ms <= self.config.max_session_timeout_ms):
            raise GroupError(Error.INVALID_SESSION_TIMEOUT,
                             f"session timeout {req.session_timeout_ms} ms is outside "
                             f"[{self.config.min_session_timeout_ms}, {self.config.max_session_timeout_ms}]")
        if not req.protocol_type or not req.protocols:
            raise GroupError(Error.INCONSISTENT_GROUP_PROTOCOL, "a member names its protocol type and protocols")

    def join(self, group: ClassicGroup, req: gpb.JoinGroupRequest, token: Token, now: Now, client_id: str,
             client_host: str) -> bool:
        """The group exists (maybe just made, empty). Answers now or later."""
        instance = instance_of(req)
        if not self._supports(group, req):
            raise GroupError(Error.INCONSISTENT_GROUP_PROTOCOL,
                             f"the group's protocol type is {group.protocol_type!r}, or no protocol of the "
                             "request is supported by every member")
        if not req.member_id:
            if len(group.members) + len(group.pending) >= self.config.max_size:
                raise GroupError(Error.GROUP_MAX_SIZE_REACHED, f"the group has {len(group.members)} members")
            member_id = f"{instance if instance is not None else client_id}-{self.new_id()}"
            existing = group.static_member(instance)
            if existing is not None:
                return self._replace_static(group, existing, member_id, req, token, now)
            if req.require_known_member_id and instance is None:
                group.pending[member_id] = now.ms + req.session_timeout_ms
                self._join_error(token, Error.MEMBER_ID_REQUIRED, member_id)
                return False
            return self._add(group, member_id, instance, req, token, now, client_id, client_host)
        if req.member_id in group.pending:
            del group.pending[req.member_id]
            return self._add(group, req.member_id, instance, req, token, now, client_id, client_host)
        member = _existing(group, req.member_id, instance)
        if group.state == ClassicState.PREPARING_REBALANCE:
            return self._update(group, member, req, token, now)
        if group.state == ClassicState.COMPLETING_REBALANCE and _protocols(req) == member.protocols:
            # The member lost the answer of this generation: the same again.
            self._join_answer(group, member, token)
            return False
        if group.state == ClassicState.STABLE and member.member_id != group.leader and _protocols(req) == member.protocols:
            self._join_answer(group, member, token)  # a follower rejoining unchanged: nothing to rebalance
            return False
        return self._update(group, member, req, token, now)

    def _supports(self, group: ClassicGroup, req: gpb.JoinGroupRequest) -> bool:
        if not group.members:
            return True
        return req.protocol_type == group.protocol_type and bool({p.name for p in req.protocols} & group.candidates())

    def _add(self, group: ClassicGroup, member_id: str, instance: Optional[str], req: gpb.JoinGroupRequest,
             token: Token, now: Now, client_id: str, client_host: str) -> bool:
        if not group.members:
            group.protocol_type = req.protocol_type
        member = ClassicMember(member_id, instance, client_id, client_host, _rebalance_timeout(req),
                               req.session_timeout_ms, _protocols(req), join_token=token)
        group.members[member_id] = member
        if group.leader is None:
            group.leader = member_id
        group.joined_during_delay = True
        if group.state == ClassicState.PREPARING_REBALANCE:
            return self._maybe_complete_join(group, now)
        return self._prepare_rebalance(group, now)

    def _update(self, group: ClassicGroup, member: ClassicMember, req: gpb.JoinGroupRequest, token: Token,
                now: Now) -> bool:
        if member.join_token is not None and member.join_token != token:
            self._join_error(member.join_token, Error.REBALANCE_IN_PROGRESS, member.member_id)  # a join replaced
        member.protocols = _protocols(req)
        member.rebalance_timeout_ms = _rebalance_timeout(req)
        member.session_timeout_ms = req.session_timeout_ms
        member.join_token = token
        if group.state == ClassicState.PREPARING_REBALANCE:
            return self._maybe_complete_join(group, now)
        return self._prepare_rebalance(group, now)

    def _replace_static(self, group: ClassicGroup, old: ClassicMember, member_id: str, req: gpb.JoinGroupRequest,
                        token: Token, now: Now) -> bool:
        """A known group.instance.id with a new member id (the consumer
        restarted): the new id takes the old one's place and assignment."""
        self._fence(old)
        del group.members[old.member_id]
        member = ClassicMember(member_id, old.instance_id, old.client_id, old.client_host, _rebalance_timeout(req),
                               req.session_timeout_ms, _protocols(req), old.assignment)
        group.members[member_id] = member
        was_leader = group.leader == old.member_id
        if was_leader:
            group.leader = member_id
        if group.state == ClassicState.STABLE and select_protocol(group) == group.protocol_name:
            # Nothing the group agreed on changes: the new member id is written and the group stays
            # in its generation. A restarted leader gets the members but need not assign (KIP-814).
            member.session_deadline_ms = now.ms + member.session_timeout_ms
            self._join_answer(group, member, token, skip_assignment=was_leader)
            return True
        member.join_token = token
        if group.state == ClassicState.PREPARING_REBALANCE:
            return self._maybe_complete_join(group, now)
        return self._prepare_rebalance(group, now)

    def _fence(self, member: ClassicMember) -> None:
        if member.join_token is not None:
            self._join_error(member.join_token, Error.FENCED_INSTANCE_ID, member.member_id)
        if member.sync_token is not None:
            self.answers.append((member.sync_token, gpb.SyncGroupResponse(error_code=Error.FENCED_INSTANCE_ID)))
        member.join_token = member.sync_token = None

    # -- rebalancing -----------------------------------------------------------------------------
    def abandon(self, group: ClassicGroup, code: int) -> None:
        """Answer every waiting JoinGroup and SyncGroup with `code`: the group
        becomes a consumer group (Kafka's convertToConsumerGroup), and its
        members rejoin that."""
        for member in group.members.values():
            if member.join_token is not None:
                self._join_error(member.join_token, code, member.member_id)
                member.join_token = None
            if member.sync_token is not None:
                self.answers.append((member.sync_token, gpb.SyncGroupResponse(error_code=code)))
                member.sync_token = None

    def rebalance(self, group: ClassicGroup, now: Now) -> bool:
        """A rebalance the coordinator starts (a group converted back from a consumer group)."""
        return self._prepare_rebalance(group, now)

    def _prepare_rebalance(self, group: ClassicGroup, now: Now) -> bool:
        if group.state == ClassicState.COMPLETING_REBALANCE:
            self._reset_assignments(group, Error.REBALANCE_IN_PROGRESS)
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        if group.state == ClassicState.EMPTY:
            delay = min(self.config.initial_rebalance_delay_ms, timeout)
            group.deadline_ms, group.initial_limit_ms = now.ms + delay, now.ms + timeout
            group.joined_during_delay = False
        else:
            group.deadline_ms, group.initial_limit_ms = now.ms + timeout, None
        _transition(group, ClassicState.PREPARING_REBALANCE, now)
        return self._maybe_complete_join(group, now)

    def _reset_assignments(self, group: ClassicGroup, code: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            if member.sync_token is not None:
                self.answers.append((member.sync_token, gpb.SyncGroupResponse(error_code=code)))
                member.sync_token = None

    def _maybe_complete_join(self, group: ClassicGroup, now: Now) -> bool:
        if group.initial_limit_ms is not None:
            return False  # the initial delayed join ends on its timer only
        if group.pending or any(m.join_token is None for m in group.members.values()):
            return False
        return self._complete_join(group, now)

    def _complete_join(self, group: ClassicGroup, now: Now) -> bool:
        for member in [m for m in group.members.values() if m.join_token is None and m.instance_id is None]:
            self._remove(group, member)
        joined = [m for m in group.members.values() if m.join_token is not None]
        if group.members and not joined:
            # Only static members that did not rejoin: wait another rebalance timeout for them.
            group.deadline_ms = now.ms + max(m.rebalance_timeout_ms for m in group.members.values())
            return False
        if group.leader not in group.members or group.members[group.leader].join_token is None:
            group.leader = joined[0].member_id if joined else None
        group.generation += 1
        group.initial_limit_ms = None
        if not group.members:
            group.protocol_name, group.protocol_type, group.deadline_ms = None, None, None
            _transition(group, ClassicState.EMPTY, now)
            return True
        group.protocol_name = select_protocol(group)
        _transition(group, ClassicState.COMPLETING_REBALANCE, now)
        group.deadline_ms = now.ms + max(m.rebalance_timeout_ms for m in group.members.values())
        for member in joined:
            token, member.join_token = member.join_token, None
            member.session_deadline_ms = now.ms + member.session_timeout_ms
            assert token is not None
            self._join_answer(group, member, token)
        return False

    def _join_answer(self, group: ClassicGroup, member: ClassicMember, token: Token,
                     skip_assignment: bool = False) -> None:
        answer = gpb.JoinGroupResponse(generation_id=group.generation, protocol_type=group.protocol_type or "",
                                       leader=group.leader or "", member_id=member.member_id,
                                       skip_assignment=skip_assignment)
        if group.protocol_name is not None:
            answer.protocol_name = group.protocol_name
        if member.member_id == group.leader:
            for m in group.members.values():
                out = answer.members.add(member_id=m.member_id, metadata=m.metadata(group.protocol_name))
                if m.instance_id is not None:
                    out.group_instance_id = m.instance_id
        self.answers.append((token, answer))

    def _join_error(self, token: Token, code: int, member_id: str = "", message: str = "") -> None:
        self.answers.append((token, gpb.JoinGroupResponse(error_code=code, member_id=member_id, generation_id=-1,
                                                          error_message=message)))

    def _remove(self, group: ClassicGroup, member: ClassicMember) -> None:
        if member.join_token is not None:
            self._join_error(member.join_token, Error.UNKNOWN_MEMBER_ID, member.member_id)
        if member.sync_token is not None:
            self.answers.append((member.sync_token, gpb.SyncGroupResponse(error_code=Error.UNKNOWN_MEMBER_ID)))
        del group.members[member.member_id]
        if group.leader == member.member_id:
            group.leader = next(iter(group.members), None)

    def _after_removal(self, group: ClassicGroup, now: Now) -> bool:
        if group.state in (ClassicState.STABLE, ClassicState.COMPLETING_REBALANCE):
            return self._prepare_rebalance(group, now)
        if group.state == ClassicState.PREPARING_REBALANCE:
            return self._maybe_complete_join(group, now)
        return False

    # -- SyncGroup -------------------------------------------------------------------------------
    def sync(self, group: ClassicGroup, req: gpb.SyncGroupRequest, token: Token, now: Now) -> bool:
        member = _existing(group, req.member_id, instance_of(req))
        if req.generation_id != group.generation:
            raise GroupError(Error.ILLEGAL_GENERATION, f"generation {req.generation_id}, the group's is "
                             f"{group.generation}")
        if ((req.HasField("protocol_type") and req.protocol_type != group.protocol_type)
                or (req.HasField("protocol_name") and req.protocol_name != group.protocol_name)):
            raise GroupError(Error.INCONSISTENT_GROUP_PROTOCOL, "not the group's protocol")
        if group.state == ClassicState.PREPARING_REBALANCE:
            raise GroupError(Error.REBALANCE_IN_PROGRESS)
        member.session_deadline_ms = now.ms + member.session_timeout_ms
        if group.state == ClassicState.STABLE:
            self.answers.append((token, self._sync_answer(group, member)))
            return False
        member.sync_token = token  # CompletingRebalance
        if member.member_id != group.leader:
            return False
        given = {a.member_id: a.assignment for a in req.assignments}
        for m in group.members.values():
            m.assignment = given.get(m.member_id, b"")
        if _record_size(group) > self.config.max_record_bytes:
            # Kafka's answer when the group's record is too large to store: the
            # syncs fail (UNKNOWN_SERVER_ERROR) and the group rebalances.
            self._reset_assignments(group, Error.UNKNOWN_SERVER_ERROR)
            return self._prepare_rebalance(group, now)
        _transition(group, ClassicState.STABLE, now)
        group.deadline_ms = None
        for m in group.members.values():
            if m.sync_token is not None:
                self.answers.append((m.sync_token, self._sync_answer(group, m)))
                m.sync_token = None
        return True

    @staticmethod
    def _sync_answer(group: ClassicGroup, member: ClassicMember) -> gpb.SyncGroupResponse:
        answer = gpb.SyncGroupResponse(assignment=member.assignment, protocol_type=group.protocol_type or "")
        if group.protocol_name is not None:
            answer.protocol_name = group.protocol_name
        return answer

    # -- Heartbeat -------------------------------------------------------------------------------
    def heartbeat(self, group: ClassicGroup, req: gpb.HeartbeatRequest, now_ms: int) -> int:
        member = _existing(group, req.member_id, instance_of(req))
        if req.generation_id != group.generation:
            raise GroupError(Error.ILLEGAL_GENERATION, f"generation {req.generation_id}, the group's is "
                             f"{group.generation}")
        member.session_deadline_ms = now_ms + member.session_timeout_ms
        return Error.REBALANCE_IN_PROGRESS if group.state == ClassicState.PREPARING_REBALANCE else Error.NONE

    # -- LeaveGroup ------------------------------------------------------------------------------
    def leave(self, group: ClassicGroup, req: gpb.LeaveGroupRequest, now: Now,
              answer: gpb.LeaveGroupResponse) -> bool:
        removed = False
        for who, instance, out in leaving_members(req, answer):
            try:
                if not who.member_id and instance is not None:
                    member = group.static_member(instance)
                    if member is None:
                        raise GroupError(Error.UNKNOWN_MEMBER_ID, f"no member has instance id {instance!r}")
                elif who.member_id in group.pending:
                    del group.pending[who.member_id]
                    removed = True
                    continue
                else:
                    member = _existing(group, who.member_id, instance)
            except GroupError as exc:
                out.error_code = exc.code
                continue
            self._remove(group, member)
            removed = True
        return self._after_removal(group, now) if removed else False

    # -- time ------------------------------------------------------------------------------------
    def expire(self, group: ClassicGroup, now: Now) -> bool:
        """Expired sessions, pending member ids and the join/sync phase's end."""
        write = False
        for member_id in [m for m, d in group.pending.items() if d <= now.ms]:
            del group.pending[member_id]
        expired = [m for m in group.members.values() if m.session_deadline_ms is not None
                   and m.session_deadline_ms <= now.ms and m.join_token is None and m.sync_token is None]
        for member in expired:
            self._remove(group, member)
        if expired:
            write |= self._after_removal(group, now)
        if group.deadline_ms is None or group.deadline_ms > now.ms:
            return write or (group.state == ClassicState.PREPARING_REBALANCE
                             and self._maybe_complete_join(group, now))
        if group.state == ClassicState.PREPARING_REBALANCE:
            if (group.initial_limit_ms is not None and group.joined_during_delay
                    and group.deadline_ms < group.initial_limit_ms):
                group.joined_during_delay = False  # members still arriving: wait one more delay
                group.deadline_ms = min(now.ms + self.config.initial_rebalance_delay_ms, group.initial_limit_ms)
                return write
            return self._complete_join(group, now) or write
        if group.state == ClassicState.COMPLETING_REBALANCE:
            # The leader's assignment did not come in time: who did not sync is gone.
            for member in [m for m in group.members.values() if m.sync_token is None]:
                self._remove(group, member)
            return self._prepare_rebalance(group, now) or write
        group.deadline_ms = None
        return write

    # -- offsets ---------------------------------------------------------------------------------
    @staticmethod
    def check_commit(group: ClassicGroup, member_id: str, instance_id: Optional[str], generation: int,
                     transactional: bool) -> None:
        """Kafka's ClassicGroup.validateOffsetCommit."""
        if generation < 0 and group.state == ClassicState.EMPTY:
            return  # an admin's or a lone consumer's commit
        if generation >= 0 or member_id or instance_id is not None:
            _existing(group, member_id, instance_id)
            if generation != group.generation:
                raise GroupError(Error.ILLEGAL_GENERATION,
                                 f"generation {generation}, the group's is {group.generation}")
        elif not transactional and group.state != ClassicState.EMPTY:
            raise GroupError(Error.UNKNOWN_MEMBER_ID, "only an empty group takes commits without a member")
        if not transactional and group.state == ClassicState.COMPLETING_REBALANCE:
            raise GroupError(Error.REBALANCE_IN_PROGRESS)

    # -- describing ------------------------------------------------------------------------------
    @staticmethod
    def describe(group: ClassicGroup, out: gpb.DescribeGroupsResponse.Group) -> None:
        """As Kafka: the members' metadata and assignments only once Stable."""
        stable = group.state == ClassicState.STABLE
        out.group_state, out.protocol_type = group.state.value, group.protocol_type or ""
        out.protocol_data = (group.protocol_name or "") if stable else ""
        for m in group.members.values():
            member = out.members.add(member_id=m.member_id, client_id=m.client_id, client_host=m.client_host)
            if m.instance_id is not None:
                member.group_instance_id = m.instance_id
            if stable:
                member.member_metadata, member.member_assignment = m.metadata(group.protocol_name), m.assignment


def instance_of(message) -> Optional[str]:
    """A request's (or a leaving member's) group.instance.id; None for a dynamic member."""
    return message.group_instance_id if message.HasField("group_instance_id") else None


def leaving_members(req: gpb.LeaveGroupRequest, answer: gpb.LeaveGroupResponse):
    """Each member a LeaveGroup names, with its instance id and its entry in
    the answer (the caller sets the entry's error)."""
    for who in req.members:
        instance = instance_of(who)
        out = answer.members.add(member_id=who.member_id)
        if instance is not None:
            out.group_instance_id = instance
        yield who, instance, out


def check_static(static, member_id: str, instance_id: str) -> None:
    """A request naming static member `instance_id` (found as `static`, or
    None) must come with the member id that instance has."""
    if static is None:
        raise GroupError(Error.UNKNOWN_MEMBER_ID, f"no member has instance id {instance_id!r}")
    if static.member_id != member_id:
        raise GroupError(Error.FENCED_INSTANCE_ID,
                         f"instance {instance_id!r} is member {static.member_id}, not {member_id}")


def _existing(group: ClassicGroup, member_id: str, instance_id: Optional[str]) -> ClassicMember:
    """Kafka's validateMember: a static member must come with the member id its instance has."""
    if instance_id is not None:
        static = group.static_member(instance_id)
        check_static(static, member_id, instance_id)
        return static
    member = group.members.get(member_id)
    if member is None:
        raise GroupError(Error.UNKNOWN_MEMBER_ID, f"{member_id!r} is not a member of {group.group_id!r}")
    return member


def _protocols(req: gpb.JoinGroupRequest) -> tuple[tuple[str, bytes], ...]:
    return tuple((p.name, p.metadata) for p in req.protocols)


def _rebalance_timeout(req: gpb.JoinGroupRequest) -> int:
    return req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0 else req.session_timeout_ms


def select_protocol(group: ClassicGroup) -> str:
    """Each member votes for the first of its protocols every member
    supports; most votes wins, a tie going to the leader's preference."""
    candidates = group.candidates()
    votes = Counter(next(name for name, _ in m.protocols if name in candidates) for m in group.members.values())
    best = max(votes.values())
    leader = group.members.get(group.leader or "") or next(iter(group.members.values()))
    preference = [name for name, _ in leader.protocols]
    return min((name for name, n in votes.items() if n == best),
               key=lambda name: preference.index(name) if name in preference else len(preference))


def _record_size(group: ClassicGroup) -> int:
    value = encode_value(group.record(), ids=None)  # a classic group's record names no topic ids
    return len(encode_key(Key(RecordType.CLASSIC_GROUP, group.group_id))) + len(value or b"") + BATCH_OVERHEAD


def _transition(group: ClassicGroup, state: ClassicState, now: Now) -> None:
    group.state, group.state_timestamp_ms = state, now.wall_ms  # a calendar fact, written in the group's record
