"""Short, readable renderings of messages and node states for traces and scenario files."""

from __future__ import annotations

from typing import Optional

from metadata_quorum.raft import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Entry,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    RaftCore,
    VoteRequest,
    VoteResponse,
)
from metadata_quorum.raft.leader import Leader
from metadata_quorum.raft.messages import AddVoterRequest, RemoveVoterRequest, UpdateVoterRequest, VoterChangeResponse
from metadata_quorum.raft.voters import voters_of_entry


def _err(error: Errors) -> str:
    return "" if error is Errors.NONE else f" {error.name}"


def _leader(leader_id: Optional[int]) -> str:
    return "-" if leader_id is None else str(leader_id)


def format_entry(entry: Entry) -> str:
    if entry.control:
        voters = voters_of_entry(entry.data)
        if voters is not None:
            return f"{entry.epoch}/<voters {','.join(str(v.key.id) for v in voters)}>"
        return f"{entry.epoch}/<leader-change>"
    return f"{entry.epoch}/{entry.data.decode(errors='replace')}"


def format_entries(entries: tuple[Entry, ...], base: int) -> str:
    return " ".join(f"{base + i}:{format_entry(e)}" for i, e in enumerate(entries))


def format_message(m: Message) -> str:
    head = f"{m.src}->{m.dst}"
    if isinstance(m, VoteRequest):
        kind = "PreVote" if m.pre_vote else "Vote"
        return (
            f"{head} {kind} epoch={m.candidate_epoch} last=({m.last_epoch},{m.last_epoch_end_offset})"
            + ("" if m.cluster_id else " cluster=''")
        )
    if isinstance(m, VoteResponse):
        kind = "PreVoteResp" if m.pre_vote else "VoteResp"
        verdict = "granted" if m.vote_granted else "rejected"
        return f"{head} {kind} {verdict} epoch={m.epoch} leader={_leader(m.leader_id)}{_err(m.error)}"
    if isinstance(m, BeginQuorumEpochRequest):
        return f"{head} BeginQuorumEpoch epoch={m.leader_epoch}"
    if isinstance(m, BeginQuorumEpochResponse):
        return f"{head} BeginQuorumEpochResp epoch={m.epoch}{_err(m.error)}"
    if isinstance(m, EndQuorumEpochRequest):
        succ = ",".join(map(str, m.preferred_successors))
        return f"{head} EndQuorumEpoch epoch={m.leader_epoch} successors=[{succ}]"
    if isinstance(m, EndQuorumEpochResponse):
        return f"{head} EndQuorumEpochResp epoch={m.epoch}{_err(m.error)}"
    if isinstance(m, FetchRequest):
        return f"{head} Fetch epoch={m.epoch} offset={m.fetch_offset} last_epoch={m.last_fetched_epoch}"
    if isinstance(m, FetchResponse):
        if m.error is not Errors.NONE:
            return f"{head} FetchResp{_err(m.error)} epoch={m.epoch} leader={_leader(m.leader_id)}"
        hw = "-" if m.high_watermark is None else str(m.high_watermark)
        parts = [f"{head} FetchResp epoch={m.epoch} hw={hw}"]
        if m.diverging_epoch is not None:
            parts.append(f"diverging=(epoch={m.diverging_epoch.epoch},end={m.diverging_epoch.end_offset})")
        elif m.snapshot_id is not None:
            parts.append(f"snapshot=(end={m.snapshot_id.end_offset},epoch={m.snapshot_id.epoch})")
        elif m.records:
            parts.append("records=[" + format_entries(m.records, m.base_offset) + "]")
        else:
            parts.append("records=[]")
        return " ".join(parts)
    if isinstance(m, FetchSnapshotRequest):
        sid = m.snapshot_id
        return f"{head} FetchSnapshot snapshot=(end={sid.end_offset},epoch={sid.epoch}) position={m.position}"
    if isinstance(m, FetchSnapshotResponse):
        if m.error is not Errors.NONE:
            return f"{head} FetchSnapshotResp{_err(m.error)}"
        return f"{head} FetchSnapshotResp position={m.position} size={m.size} bytes={len(m.chunk)}"
    if isinstance(m, DescribeQuorumRequest):
        return f"{head} DescribeQuorum"
    if isinstance(m, DescribeQuorumResponse):
        return f"{head} DescribeQuorumResp{_err(m.error)}"
    if isinstance(m, (AddVoterRequest, UpdateVoterRequest)):
        return f"{head} {type(m).__name__[:-7]} {m.voter.key}"
    if isinstance(m, RemoveVoterRequest):
        return f"{head} RemoveVoter {m.voter}"
    if isinstance(m, VoterChangeResponse):
        return f"{head} VoterChangeResp{_err(m.error) or ' NONE'} {m.error_message}".rstrip()
    return f"{head} {m!r}"


def format_state(core: RaftCore) -> str:
    """One line: role, epoch, leader, vote, log and high watermark."""
    state = core.state
    data = core.quorum_state()
    parts = [f"{state.name} epoch={data.epoch}"]
    leader = core.leader()
    if leader is not None:
        parts.append(f"leader={leader}")
    if data.voted_for is not None:
        parts.append(f"voted={data.voted_for}")
    log = core.log
    parts.append(f"log=[{log.start_offset},{log.end_offset})")
    hw = core.high_watermark
    if isinstance(state, Leader) and state.high_watermark is None:
        parts.append("hw=pending")
    else:
        parts.append(f"hw={hw}")
    if core.snapshot is not None:
        sid = core.snapshot.snapshot_id
        parts.append(f"snapshot=(end={sid.end_offset},epoch={sid.epoch})")
    return " ".join(parts)
