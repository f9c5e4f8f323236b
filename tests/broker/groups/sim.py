"""Consumers driving a GroupMachine as the protocol expects, for the pure tests.

A client owns what it was last told to own once it has `processed` the
answer: it drops revoked partitions and takes new ones then, and reports
what it owns in every heartbeat.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Optional

from broker.errors import Error
from broker.groups.machine import GroupConfig, GroupMachine
from broker.groups.records import Assignment, MemberState
from broker.groups.state import GroupsState
from kraftlog_api import groups_pb2 as gpb

GROUP = "g"
CONFIG = GroupConfig(session_timeout_ms=10_000, heartbeat_interval_ms=1000)
# Where the wall clock starts: far from the monotonic clock (0), as on a real
# node, so a deadline computed from the wrong clock shows.
WALL_START = 1_764_000_000_000


@dataclass
class Client:
    name: str
    topics: tuple[str, ...]
    member_id: str = ""
    epoch: int = 0
    told: Assignment = frozenset()   # the last assignment the coordinator sent
    owned: Assignment = frozenset()  # what the client consumes now
    history: list[tuple[Assignment, Assignment]] = field(default_factory=list)  # (told before, told after)


def owned_proto(owned: Assignment) -> gpb.OwnedPartitions:
    by_topic: dict[str, list[int]] = {}
    for t, p in owned:
        by_topic.setdefault(t, []).append(p)
    return gpb.OwnedPartitions(topic_partitions=[gpb.TopicPartitions(topic=t, partitions=sorted(p))
                                                 for t, p in sorted(by_topic.items())])


def told(response: gpb.ConsumerGroupHeartbeatResponse) -> Assignment:
    return frozenset((t.topic, p) for t in response.assignment.topic_partitions for p in t.partitions)


class Sim:
    def __init__(self, topics: dict[str, int], assignor: Optional[str] = None) -> None:
        ids = itertools.count(1)
        self.machine = GroupMachine(CONFIG, new_member_id=lambda: f"m{next(ids)}")
        self.topics = dict(topics)
        self.assignor = assignor
        self.clients: dict[str, Client] = {}
        self.records: list = []
        self.now = 0  # the monotonic clock
        self.skew = 0  # how far the wall clock was jumped

    @property
    def wall(self) -> int:
        """The wall clock: it runs with the monotonic one, plus the jumps made by `skew`."""
        return WALL_START + self.now + self.skew

    @property
    def group(self):
        return self.machine.state.groups[GROUP]

    def heartbeat(self, client: Client) -> gpb.ConsumerGroupHeartbeatResponse:
        request = gpb.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=client.member_id,
                                                    member_epoch=client.epoch, rebalance_timeout_ms=30_000,
                                                    owned_partitions=owned_proto(client.owned))
        if client.epoch == 0:
            request.subscribed_topic_names.names.extend(client.topics)
            if self.assignor:
                request.server_assignor = self.assignor
        response, records = self.machine.heartbeat(request, self.now, self.topics, wall_ms=self.wall)
        self.records += records
        if response.error_code in (Error.UNKNOWN_MEMBER_ID, Error.FENCED_MEMBER_EPOCH):
            # Removed by the coordinator (it did not revoke in time): give up
            # everything and rejoin under the same id.
            client.epoch, client.told, client.owned = 0, frozenset(), frozenset()
        if response.error_code:
            return response
        client.member_id, client.epoch = response.member_id, response.member_epoch
        if response.HasField("assignment"):
            client.history.append((client.told, told(response)))
            client.told = told(response)
        return response

    def take_records(self) -> list:
        records, self.records = self.records, []
        return records

    def join(self, name: str, topics: tuple[str, ...]) -> Client:
        client = self.clients[name] = Client(name, topics)
        assert self.heartbeat(client).error_code == 0
        return client

    def leave(self, name: str) -> int:
        client = self.clients.pop(name)
        client.epoch = -1
        return self.heartbeat(client).error_code

    def crash(self, name: str) -> None:
        """The client stops; the coordinator finds out when its session expires."""
        self.clients.pop(name)

    def expire_all_silent(self) -> None:
        """Time passes past the session timeout of every client that stopped."""
        live = {c.member_id for c in self.clients.values()}
        self.now += CONFIG.session_timeout_ms + 1
        group = self.machine.state.groups.get(GROUP)
        for member in group.members.values() if group else ():
            if member.member_id in live:
                member.session_deadline_ms = self.now + CONFIG.session_timeout_ms
        self.records += self.machine.expire(self.now, self.topics, wall_ms=self.wall)

    @staticmethod
    def process(client: Client) -> None:
        client.owned = client.told

    def converge(self, rounds: int = 20) -> None:
        for _ in range(rounds):
            for client in list(self.clients.values()):
                self.process(client)
                self.heartbeat(client)
            if self.stable():
                for client in self.clients.values():
                    self.process(client)
                return
        raise AssertionError(f"no convergence in {rounds} rounds: {self.describe()}")

    def stable(self) -> bool:
        group = self.group
        return all(m.current.state == MemberState.STABLE and m.current.member_epoch == group.assignment_epoch
                   and m.current.assigned == m.target for m in group.members.values()) and all(
            c.member_id in group.members and c.told == group.members[c.member_id].current.assigned
            for c in self.clients.values())

    def describe(self) -> str:
        return "; ".join(f"{m.member_id}: {m.current} target {sorted(m.target)}"
                         for m in self.group.members.values())

    def check_no_two_owners(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        members = self.machine.state.groups[GROUP].members if GROUP in self.machine.state.groups else {}
        for client in self.clients.values():
            if client.member_id not in members:
                continue  # removed: it stops consuming by itself (its timeouts passed)
            for tp in client.owned:
                assert tp not in seen, f"{tp} owned by {seen[tp]} and {client.name}"
                seen[tp] = client.name
        owners: dict[tuple[str, int], str] = {}
        for member in self.group.members.values():
            for tp in member.owns:
                assert tp not in owners, f"{tp} held by {owners[tp]} and {member.member_id}"
                owners[tp] = member.member_id

    def replayed(self) -> GroupsState:
        state = GroupsState()
        for record in self.records:
            state.replay(record)
        return state
