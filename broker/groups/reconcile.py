"""A member's next current assignment on its way to its target (KIP-848's
reconciliation), as a pure function.

A partition the target takes away is first moved to `pending_revocation`
(state UNREVOKED_PARTITIONS, epoch unchanged). Only once the member's
heartbeat reports owned partitions without any of them is the revocation
done and the member moves to the target epoch; then it gets the target's
new partitions that nobody else holds (current or pending), and waits in
UNRELEASED_PARTITIONS for the rest. So a partition never has two owners:
it changes hands only after its old owner said it let go (or left the
group, which frees everything it held).
"""
from __future__ import annotations

from typing import Callable, Optional

from .records import Assignment, CurrentMemberAssignment, MemberState, TopicPartition


def next_assignment(member_id: str, current: CurrentMemberAssignment, target_epoch: int, target: Assignment,
                    owned: Optional[Assignment], owner: Callable[[TopicPartition], Optional[str]],
                    ) -> CurrentMemberAssignment:
    """`owned` is what the member reported in this heartbeat (None: not
    reported); `owner` names the member holding a partition, if any."""
    if current.state == MemberState.UNREVOKED_PARTITIONS:
        if owned is None or owned & current.pending_revocation:
            return current  # still revoking
        current = CurrentMemberAssignment(current.member_epoch, current.previous_member_epoch,
                                          MemberState.STABLE, current.assigned, frozenset())
    elif current.state == MemberState.STABLE and current.member_epoch == target_epoch:
        return current
    keep = current.assigned & target
    revoke = current.assigned - target
    if revoke:
        return CurrentMemberAssignment(current.member_epoch, current.previous_member_epoch,
                                       MemberState.UNREVOKED_PARTITIONS, keep, revoke)
    wanted = target - current.assigned
    free = frozenset(tp for tp in wanted if owner(tp) in (None, member_id))
    previous = current.previous_member_epoch if current.member_epoch == target_epoch else current.member_epoch
    state = MemberState.UNRELEASED_PARTITIONS if wanted - free else MemberState.STABLE
    return CurrentMemberAssignment(target_epoch, previous, state, keep | free, frozenset())
