"""Classic members of a consumer group (KIP-848's online migration; the
conversions themselves are migration.py): the classic protocol's requests
answered from the consumer group's state, as Kafka 4's
classicGroupJoinToConsumerGroup and its siblings do. Part of GroupMachine
(a mixin: it writes through the machine's records).

- JoinGroup: a new dynamic member is first handed an id (MEMBER_ID_REQUIRED,
  v4+); its protocols must share one with every other classic member. Its
  subscription is its preferred protocol's ConsumerProtocolSubscription; a
  changed subscription bumps the group epoch (a new target assignment by
  the group's assignor). The member is reconciled at once against the
  partitions its subscription says it owns, and answered at once:
  generation = its member epoch, no leader (the assignment is the
  coordinator's), its preferred protocol as the group's.
- SyncGroup: its current assignment, as a ConsumerProtocolAssignment of the
  version its subscription used.
- SyncGroup and Heartbeat answer REBALANCE_IN_PROGRESS when the group epoch
  moved past the member's (it must rejoin within its rebalance timeout),
  except while it revokes (it rejoins by itself after revoking), as Kafka's
  throwIfRebalanceInProgress; a Heartbeat also when a partition the member
  waits for was released (its rejoin picks it up).
- A static member (group.instance.id) joining without its member id is a
  restart: a new id takes its place, epoch and assignment (the old id is
  fenced), as Kafka's static member replacement.
- LeaveGroup, session and rebalance timeouts: the member is removed, as a
  consumer group member is.
"""
from __future__ import annotations

from typing import Optional

from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.consumer_protocol import encode_assignment

from ..errors import Error
from .classic import GroupError, Now, Token, check_static, instance_of, leaving_members
from .migration import CONSUMER_PROTOCOL_TYPE, protocol_version, subscription_of
from .records import ClassicMemberMetadata, Key, MemberMetadata, MemberState, RecordType, TargetAssignmentMember
from .reconcile import next_assignment
from .state import ConsumerGroup, Member


def classic_member(group: ConsumerGroup, member_id: str, instance_id: Optional[str] = None) -> Member:
    """The classic member a classic request names (a consumer-protocol
    member is unknown to the classic protocol)."""
    if instance_id is not None:
        check_static(next((m for m in group.members.values()
                           if m.metadata is not None and m.metadata.instance_id == instance_id), None),
                     member_id, instance_id)
    member = group.members.get(member_id)
    if member is None or member.metadata is None or member.metadata.classic is None:
        raise GroupError(Error.UNKNOWN_MEMBER_ID, f"{member_id!r} is not a classic member of {group.group_id!r}")
    return member


def _check_protocols(group: ConsumerGroup, joining: set[str], protocols) -> None:
    """Kafka's throwIfClassicProtocolIsNotSupported: a protocol every other
    classic member (not the `joining` ids) supports."""
    names = {name for name, _ in protocols}
    for other in group.members.values():
        if other.member_id not in joining and other.metadata is not None and other.metadata.classic is not None:
            names &= {name for name, _ in other.metadata.classic.protocols}
    if not names:
        raise GroupError(Error.INCONSISTENT_GROUP_PROTOCOL,
                         f"no protocol of the request is supported by every classic member of {group.group_id}")


class MixedMembers:
    """GroupMachine's part for classic members of consumer groups."""

    def _mixed_join(self, group: ConsumerGroup, req: gpb.JoinGroupRequest, token: Token, now_ms: int,
                    client_id: str, client_host: str, topics) -> None:
        if req.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise GroupError(Error.INCONSISTENT_GROUP_PROTOCOL,
                             f"protocol type {req.protocol_type!r}: group {group.group_id} is a consumer group")
        protocols = tuple((p.name, p.metadata) for p in req.protocols)
        subscription = subscription_of(protocols)
        if subscription is None:
            raise GroupError(Error.INCONSISTENT_GROUP_PROTOCOL,
                             f"the metadata of protocol {protocols[0][0]!r} is not a consumer protocol subscription")
        instance = instance_of(req)
        static = next((m for m in group.members.values()
                       if instance is not None and m.metadata is not None and m.metadata.instance_id == instance), None)
        replaced: Optional[Member] = None
        if req.member_id:
            if instance is not None or req.member_id in group.members:
                member_id = classic_member(group, req.member_id, instance).member_id
            else:
                member_id = req.member_id  # as Kafka: a new dynamic member with the id it was handed
        elif static is not None:
            if static.metadata.classic is None:
                raise GroupError(Error.UNRELEASED_INSTANCE_ID,
                                 f"instance {instance!r} is consumer-protocol member {static.member_id}")
            member_id, replaced = self.new_member_id(), static  # a static member restarted
        else:
            member_id = self.new_member_id()
        _check_protocols(group, {member_id, replaced.member_id if replaced else member_id}, protocols)
        if not req.member_id and instance is None and req.require_known_member_id:
            self.classic.answers.append((token, gpb.JoinGroupResponse(
                error_code=Error.MEMBER_ID_REQUIRED, member_id=member_id, generation_id=-1)))
            return
        member = group.members.get(member_id)
        old = member.metadata if member is not None else None
        if replaced is not None:
            self._replace_static(group, replaced, member_id)
            old = replaced.metadata
        metadata = MemberMetadata(
            instance_id=instance, rack_id=subscription.rack_id, client_id=old.client_id if old else client_id,
            client_host=old.client_host if old else client_host,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))), subscribed_topic_regex=None,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0 else req.session_timeout_ms,
            server_assignor=None, classic=ClassicMemberMetadata(req.session_timeout_ms, protocols))
        if metadata != old:
            self._emit(Key(RecordType.MEMBER_METADATA, group.group_id, member_id), metadata)
        member = group.members[member_id]
        bump = old is None or (old.subscribed_topic_names, old.subscribed_topic_regex) != (
            metadata.subscribed_topic_names, metadata.subscribed_topic_regex)
        self._maybe_bump(group, topics, bump)
        self._reconcile_classic(group, member, subscription.owned, now_ms)
        self.classic.answers.append((token, gpb.JoinGroupResponse(
            generation_id=member.current.member_epoch, protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=protocols[0][0], leader="", member_id=member_id)))

    def _replace_static(self, group: ConsumerGroup, replaced: Member, member_id: str) -> None:
        """Kafka's static member replacement: the new member id takes the
        instance's place, epoch and assignment (no rebalance); the old id is
        fenced (its requests are unknown, or FENCED_INSTANCE_ID with the instance)."""
        current, target = replaced.current, replaced.target
        self._member_tombstones(group, replaced.member_id)
        self._emit(Key(RecordType.MEMBER_METADATA, group.group_id, member_id), replaced.metadata)
        self._emit(Key(RecordType.TARGET_ASSIGNMENT_MEMBER, group.group_id, member_id), TargetAssignmentMember(target))
        self._emit(Key(RecordType.CURRENT_MEMBER_ASSIGNMENT, group.group_id, member_id), current)

    def _reconcile_classic(self, group: ConsumerGroup, member: Member, owned, now_ms: int) -> None:
        """A classic member reports what it owns only when it joins: that is when it moves towards its target."""
        before = member.current
        after = next_assignment(member.member_id, before, group.assignment_epoch, member.target, owned,
                                group.owners.get)
        if after.state == MemberState.UNREVOKED_PARTITIONS and before.state != MemberState.UNREVOKED_PARTITIONS:
            # The join already says what the member still owns (an eager one: nothing): the
            # revocation may be over at once.
            after = next_assignment(member.member_id, after, group.assignment_epoch, member.target, owned,
                                    group.owners.get)
        if after != before:
            self._emit(Key(RecordType.CURRENT_MEMBER_ASSIGNMENT, group.group_id, member.member_id), after)
        member.session_deadline_ms = now_ms + member.metadata.classic.session_timeout_ms
        if after.state != MemberState.UNREVOKED_PARTITIONS:
            member.revocation_deadline_ms = None
        elif before.state != MemberState.UNREVOKED_PARTITIONS or member.revocation_deadline_ms is None:
            member.revocation_deadline_ms = now_ms + self._rebalance_timeout(member)

    def _mixed_sync(self, group: ConsumerGroup, req: gpb.SyncGroupRequest, token: Token, now_ms: int) -> None:
        member = classic_member(group, req.member_id, instance_of(req))
        self._check_generation(member, req.generation_id)
        protocols = member.metadata.classic.protocols
        if ((req.HasField("protocol_type") and req.protocol_type != CONSUMER_PROTOCOL_TYPE)
                or (req.HasField("protocol_name") and req.protocol_name != protocols[0][0])):
            raise GroupError(Error.INCONSISTENT_GROUP_PROTOCOL, "not the member's protocol")
        member.session_deadline_ms = now_ms + member.metadata.classic.session_timeout_ms
        self._check_rebalance(group, member, now_ms)
        self.classic.answers.append((token, gpb.SyncGroupResponse(
            assignment=encode_assignment(member.current.assigned, protocol_version(protocols[0][1])),
            protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocols[0][0])))

    def _mixed_heartbeat(self, group: ConsumerGroup, req: gpb.HeartbeatRequest, now_ms: int) -> int:
        member = classic_member(group, req.member_id, instance_of(req))
        self._check_generation(member, req.generation_id)
        member.session_deadline_ms = now_ms + member.metadata.classic.session_timeout_ms
        self._check_rebalance(group, member, now_ms)
        if member.current.state == MemberState.UNRELEASED_PARTITIONS and any(
                group.owners.get(tp) is None for tp in member.target - member.current.assigned):
            # At the target epoch, waiting for partitions others held: one was released since,
            # and a rejoin picks it up (it is the member's only way to hear of its assignment).
            return Error.REBALANCE_IN_PROGRESS
        return Error.NONE

    def _check_rebalance(self, group: ConsumerGroup, member: Member, now_ms: int) -> None:
        """Kafka's throwIfRebalanceInProgress: a newer group epoch means the
        member must rejoin (within its rebalance timeout, or it is removed),
        unless it is revoking: it rejoins by itself once that is done."""
        if group.epoch > member.current.member_epoch and member.current.state != MemberState.UNREVOKED_PARTITIONS:
            if member.revocation_deadline_ms is None:
                member.revocation_deadline_ms = now_ms + self._rebalance_timeout(member)
            raise GroupError(Error.REBALANCE_IN_PROGRESS,
                             f"group {group.group_id} is at epoch {group.epoch}: member {member.member_id} rejoins")

    def _mixed_leave(self, group: ConsumerGroup, req: gpb.LeaveGroupRequest, now: Now, topics,
                     response: gpb.LeaveGroupResponse) -> None:
        for who, instance, out in leaving_members(req, response):
            try:
                if not who.member_id and instance is not None:
                    member = next((m for m in group.members.values() if m.metadata is not None
                                   and m.metadata.classic is not None and m.metadata.instance_id == instance), None)
                    if member is None:
                        raise GroupError(Error.UNKNOWN_MEMBER_ID, f"no member has instance id {instance!r}")
                else:
                    member = classic_member(group, who.member_id, instance)
            except GroupError as exc:
                out.error_code = exc.code
                continue
            self._remove_member(group, member.member_id, topics, now)

    @staticmethod
    def _check_generation(member: Member, generation: int) -> None:
        if generation != member.current.member_epoch:
            raise GroupError(Error.ILLEGAL_GENERATION,
                             f"generation {generation}, the member's epoch is {member.current.member_epoch}")


__all__ = ["MixedMembers", "classic_member"]
