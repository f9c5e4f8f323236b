"""Small tools for driving one RaftCore by hand in unit tests."""

from __future__ import annotations

import random
from typing import Iterable, Optional

from metadata_quorum.raft import (
    BeginQuorumEpochRequest,
    DurableState,
    Entry,
    FetchRequest,
    FetchResponse,
    Message,
    QuorumConfig,
    RaftCore,
    Ready,
    VoteRequest,
    VoteResponse,
    Errors,
)

CLUSTER = "test-cluster"
CONFIG = QuorumConfig(append_linger_ms=0)


def make_core(
    node_id: int = 1,
    voters: Iterable[int] = (1, 2, 3),
    now: int = 0,
    durable: Optional[DurableState] = None,
    config: QuorumConfig = CONFIG,
    seed: int = 7,
) -> RaftCore:
    return RaftCore(node_id, voters, CLUSTER, random.Random(seed), config, now=now, durable=durable)


def drain(core: RaftCore, flush: bool = True) -> list[Ready]:
    """Take every Ready bundle; with flush=True, acknowledge the log as flushed right away."""
    bundles = []
    while True:
        ready = core.ready()
        if ready is None:
            return bundles
        bundles.append(ready)
        if flush and (ready.entries or ready.truncate_to is not None):
            core.advance(core.log.end_offset)


def sent(core: RaftCore, flush: bool = True) -> list[Message]:
    return [m for r in drain(core, flush) for m in r.messages]


def of_type(messages: list[Message], cls: type) -> list:
    return [m for m in messages if isinstance(m, cls)]


def vote_response(req: VoteRequest, granted: bool = True, epoch: Optional[int] = None, leader: Optional[int] = None) -> VoteResponse:
    return VoteResponse(
        src=req.dst,
        dst=req.src,
        correlation_id=req.correlation_id,
        error=Errors.NONE,
        epoch=req.candidate_epoch - (1 if req.pre_vote else 0) if epoch is None else epoch,
        leader_id=leader,
        vote_granted=granted,
        pre_vote=req.pre_vote,
    )


def elect(core: RaftCore, now: int = 0) -> None:
    """Make `core` the leader: campaign and answer its pre-votes and votes with grants."""
    core.campaign()
    for _ in range(2):
        requests = of_type(sent(core), VoteRequest)
        for req in requests:
            core.step(vote_response(req), now)
    assert core.is_leader(), core.state
    drain(core)


def fetch(
    src: int,
    dst: int,
    epoch: int,
    offset: int,
    last_epoch: int,
    max_wait_ms: int = 0,
    cid: int = 1,
    cluster_id: str = CLUSTER,
) -> FetchRequest:
    return FetchRequest(
        src=src,
        dst=dst,
        correlation_id=cid,
        cluster_id=cluster_id,
        replica_id=src,
        epoch=epoch,
        fetch_offset=offset,
        last_fetched_epoch=last_epoch,
        max_wait_ms=max_wait_ms,
    )


def begin_epoch(src: int, dst: int, epoch: int, cluster_id: str = CLUSTER) -> BeginQuorumEpochRequest:
    return BeginQuorumEpochRequest(src=src, dst=dst, correlation_id=99, cluster_id=cluster_id, leader_epoch=epoch, leader_id=src)


def follow(core: RaftCore, leader: int, epoch: int, now: int = 0) -> list[Message]:
    """Tell `core` that `leader` leads `epoch`; returns what it sent."""
    core.step(begin_epoch(leader, core.node_id, epoch), now)
    return sent(core)


def records_response(req: FetchRequest, entries: list[Entry], hw: Optional[int], epoch: int) -> FetchResponse:
    return FetchResponse(
        src=req.dst,
        dst=req.src,
        correlation_id=req.correlation_id,
        error=Errors.NONE,
        epoch=epoch,
        leader_id=req.dst,
        high_watermark=hw,
        base_offset=req.fetch_offset,
        records=tuple(entries),
    )
