"""KIP-848's online migration between the two kinds of groups, as Kafka 4's
group coordinator does it under group.consumer.migration.policy:

- upgrade: a ConsumerGroupHeartbeat joining a classic group with members
  converts it into a consumer group when its protocol type is "consumer"
  and every member's subscription and assignment read as Kafka's embedded
  consumer protocol (and no partition is assigned twice); else the join is
  GROUP_ID_NOT_FOUND. The classic members stay, as classic members of the
  consumer group: epoch = the classic generation, target = current = the
  assignment they hold (a member that joined mid-rebalance: none). As
  Kafka's convertToConsumerGroup, a group mid-rebalance converts too: its
  waiting JoinGroups and SyncGroups are answered REBALANCE_IN_PROGRESS, and
  the members rejoin the consumer group.
- classic members of a consumer group keep speaking JoinGroup, SyncGroup,
  Heartbeat and LeaveGroup (see MixedMembers); the group's assignor computes
  their assignment server-side and their JoinGroup/SyncGroup answers carry
  it as a ConsumerProtocolAssignment.
- downgrade: when the last ConsumerGroupHeartbeat member leaves (or expires)
  and the members left are all classic, the group becomes a classic group
  again: members keep their assignment, and a rebalance starts.

Records: a classic member of a consumer group is a consumer group member
whose ConsumerGroupMemberMetadataValue has Kafka's ClassicMemberMetadata
(records.ClassicMemberMetadata), so replaying the log rebuilds it.
"""
from __future__ import annotations

from typing import Optional

from kafka_protocol.consumer_protocol import Subscription, decode_assignment, decode_subscription
from kafka_protocol.schema_types import SchemaError

from ..config import MIGRATION_POLICIES
from .classic import ClassicGroup, ClassicMember, ClassicState, select_protocol
from .records import Assignment, ClassicMemberMetadata, MemberMetadata
from .state import ConsumerGroup

CONSUMER_PROTOCOL_TYPE = "consumer"
DISABLED, UPGRADE, DOWNGRADE, BIDIRECTIONAL = MIGRATION_POLICIES  # group.consumer.migration.policy
DEFAULT_MIGRATION_POLICY = BIDIRECTIONAL  # Kafka 4's default


def upgrades(policy: str) -> bool:
    return policy in (UPGRADE, BIDIRECTIONAL)


def downgrades(policy: str) -> bool:
    return policy in (DOWNGRADE, BIDIRECTIONAL)


def subscription_of(protocols: tuple[tuple[str, bytes], ...]) -> Optional[Subscription]:
    """The member's subscription (its preferred protocol's metadata), None
    when that is not Kafka's consumer protocol."""
    if not protocols:
        return None
    try:
        return decode_subscription(protocols[0][1])
    except SchemaError:
        return None


def protocol_version(metadata: bytes) -> int:
    """The consumer protocol version a member's subscription used: its assignment is answered in it."""
    return int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0


def upgrade_plan(classic: ClassicGroup) -> Optional[dict[str, tuple[Subscription, Assignment]]]:
    """Each member's subscription and assignment if the group may become a
    consumer group (Kafka's validateOnlineUpgrade and what fromClassicGroup
    reads), else None."""
    if not classic.members or classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    plan: dict[str, tuple[Subscription, Assignment]] = {}
    taken: set[tuple[str, int]] = set()
    for member in classic.members.values():
        try:
            subscription = decode_subscription(member.metadata(classic.protocol_name))
            assignment = decode_assignment(member.assignment)
        except SchemaError:
            return None
        if assignment & taken:
            return None  # a leader that gave a partition twice: nothing consistent to carry over
        taken |= assignment
        plan[member.member_id] = (subscription, assignment)
    return plan


def member_metadata(classic: ClassicMember, subscription: Subscription) -> MemberMetadata:
    return MemberMetadata(
        instance_id=classic.instance_id, rack_id=subscription.rack_id, client_id=classic.client_id,
        client_host=classic.client_host, subscribed_topic_names=tuple(sorted(set(subscription.topics))),
        subscribed_topic_regex=None, rebalance_timeout_ms=classic.rebalance_timeout_ms, server_assignor=None,
        classic=ClassicMemberMetadata(classic.session_timeout_ms, classic.protocols))


def downgrade_candidates(group: ConsumerGroup, max_size: int) -> bool:
    """Kafka's validateOnlineDowngrade once its last consumer-protocol
    member left: classic members only, as many as a classic group may have
    (group.classic.max.size)."""
    return 0 < len(group.members) <= max_size and all(
        m.metadata is not None and m.metadata.classic is not None for m in group.members.values())


def to_classic(group: ConsumerGroup, wall_ms: int, encode) -> Optional[ClassicGroup]:
    """The classic group the (all-classic) consumer group becomes, Stable
    (since `wall_ms`, the wall clock's time) with each member's current
    assignment (`encode(partitions, version)`), or None when the members
    share no protocol. The members keep their session deadlines."""
    classic = ClassicGroup(group.group_id, CONSUMER_PROTOCOL_TYPE, group.epoch, state=ClassicState.STABLE,
                           state_timestamp_ms=wall_ms)
    for member_id, member in sorted(group.members.items()):
        meta = member.metadata
        assert meta is not None and meta.classic is not None
        classic.members[member_id] = ClassicMember(
            member_id, meta.instance_id, meta.client_id, meta.client_host, meta.rebalance_timeout_ms,
            meta.classic.session_timeout_ms, meta.classic.protocols, session_deadline_ms=member.session_deadline_ms)
    if not classic.candidates():
        return None
    classic.leader = next(iter(classic.members))
    classic.protocol_name = select_protocol(classic)
    for member_id, member in classic.members.items():
        member.assignment = encode(group.members[member_id].current.assigned,
                                   protocol_version(member.metadata(classic.protocol_name)))
    return classic
