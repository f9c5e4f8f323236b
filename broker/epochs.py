"""OffsetsForLeaderEpoch as Kafka answers it, over the log's epoch cache.

`LeaderEpochCache.end_offset_for` answers (-1, -1) for an epoch older than
the cache's first entry. Kafka answers (that epoch, the first entry's start
offset) instead - the requester's epoch ended at the latest where ours
begins - and divergence needs that answer: without it a follower whose whole
log predates the leader's first epoch (after an unclean election, or
retention) can never find where to truncate.
"""
from __future__ import annotations

from partition_log.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from partition_log.log import Log


def end_offset_for_epoch(lg: Log, epoch: int) -> tuple[int, int]:
    """(the largest epoch <= `epoch` known, where it ends); for an epoch below
    the first known one, (`epoch`, the first one's start offset); (-1, -1)
    for an unknown epoch above the latest or an empty cache."""
    entries = lg.leader_epochs.entries
    if epoch < 0:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    if entries and epoch < entries[0].epoch:
        return epoch, entries[0].start_offset
    return lg.end_offset_for_epoch(epoch)
