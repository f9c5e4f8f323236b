"""Replica placement for new partitions, and checks of explicit placements.

Placement is deterministic: the same brokers, counts and `start` give the
same assignment. Leaders go round the brokers in turn; each follower goes
to a broker on a rack the partition does not use yet (while there is one),
then to the broker holding the fewest replicas of this placement. Brokers
are ordered by alternating racks, so consecutive leaders sit on different
racks too. Brokers without a rack count as one rack of their own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Collection, Iterable, Optional, Sequence

from metadata_quorum.image import MetadataImage

from .errors import ControllerError, Error


@dataclass(frozen=True)
class PlacementBroker:
    broker_id: int
    rack: Optional[str] = None


def usable_brokers(image: MetadataImage) -> list[PlacementBroker]:
    """Brokers new replicas may go to: unfenced and not shutting down, by id."""
    return [
        PlacementBroker(b.broker_id, b.rack)
        for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)
        if not b.fenced and not b.in_controlled_shutdown
    ]


def rack_alternating(brokers: Iterable[PlacementBroker]) -> list[PlacementBroker]:
    """Brokers ordered so that neighbours are on different racks: r1b1, r2b1, r3b1, r1b2, ..."""
    by_rack: dict[str, list[PlacementBroker]] = {}
    for broker in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault(_rack_key(broker), []).append(broker)
    racks = [by_rack[r] for r in sorted(by_rack)]
    ordered: list[PlacementBroker] = []
    for i in range(max((len(r) for r in racks), default=0)):
        ordered.extend(rack[i] for rack in racks if i < len(rack))
    return ordered


def place_replicas(
    brokers: Sequence[PlacementBroker], num_partitions: int, replication_factor: int, start: int = 0
) -> list[tuple[int, ...]]:
    """Replica lists (leader first) for `num_partitions` new partitions.

    `start` rotates where the placement begins, so that successive topics do
    not all put their first leader on the same broker.
    """
    if replication_factor < 1:
        raise ControllerError(Error.INVALID_REPLICATION_FACTOR, "the replication factor must be at least 1")
    if replication_factor > len(brokers):
        raise ControllerError(
            Error.INVALID_REPLICATION_FACTOR,
            f"replication factor {replication_factor} is larger than the {len(brokers)} usable broker(s)",
        )
    order = rack_alternating(brokers)
    n = len(order)
    position = {b.broker_id: i for i, b in enumerate(order)}
    leaders: Counter[int] = Counter()
    replicas: Counter[int] = Counter()
    result: list[tuple[int, ...]] = []
    for p in range(num_partitions):
        base = (start + p) % n

        def turn(b: PlacementBroker, origin: int = base) -> int:
            return (position[b.broker_id] - origin) % n

        leader = min(order, key=lambda b: (leaders[b.broker_id], replicas[b.broker_id], turn(b)))
        chosen = [leader]
        racks = Counter({_rack_key(leader): 1})
        # Followers start further round each lap of the brokers, so that
        # leaders do not always pair with the same followers.
        follower_origin = position[leader.broker_id] + 1 + (start + p) // n
        while len(chosen) < replication_factor:
            follower = min(
                (b for b in order if b not in chosen),
                key=lambda b: (racks[_rack_key(b)], replicas[b.broker_id], turn(b, follower_origin)),
            )
            chosen.append(follower)
            racks[_rack_key(follower)] += 1
        leaders[leader.broker_id] += 1
        for b in chosen:
            replicas[b.broker_id] += 1
        result.append(tuple(b.broker_id for b in chosen))
    return result


def validate_assignments(
    assignments: Iterable[tuple[int, Sequence[int]]],
    expected_partitions: range,
    registered: Collection[int],
    replication_factor: Optional[int] = None,
) -> dict[int, tuple[int, ...]]:
    """Check an explicit placement: partition id -> replicas, in partition order.

    Every partition of `expected_partitions` exactly once; each replica list
    non-empty, without repeats, of registered brokers only, and all of one
    length (`replication_factor` when given). INVALID_REPLICA_ASSIGNMENT otherwise.
    """
    placed: dict[int, tuple[int, ...]] = {}
    for partition_id, broker_ids in assignments:
        if partition_id not in expected_partitions:
            raise _invalid(
                f"partition {partition_id} is not one of {_describe(expected_partitions)}")
        if partition_id in placed:
            raise _invalid(f"partition {partition_id} is assigned twice")
        replicas = tuple(broker_ids)
        if not replicas:
            raise _invalid(f"partition {partition_id} has no replicas")
        if len(set(replicas)) != len(replicas):
            raise _invalid(f"partition {partition_id} lists a broker twice: {list(replicas)}")
        unknown = [b for b in replicas if b not in registered]
        if unknown:
            raise _invalid(f"partition {partition_id}: broker(s) {unknown} are not registered")
        placed[partition_id] = replicas
    missing = [p for p in expected_partitions if p not in placed]
    if missing:
        raise _invalid(f"no assignment for partition(s) {missing}")
    lengths = {len(r) for r in placed.values()}
    if replication_factor is not None:
        lengths.add(replication_factor)
    if len(lengths) > 1:
        expected = replication_factor if replication_factor is not None else len(placed[expected_partitions[0]])
        odd = [p for p, r in placed.items() if len(r) != expected]
        raise _invalid(f"every partition needs {expected} replicas; partition(s) {odd} differ")
    return {p: placed[p] for p in expected_partitions}


def _rack_key(broker: PlacementBroker) -> str:
    # "" sorts before every rack name; brokers without a rack share it.
    return "" if broker.rack is None else "rack:" + broker.rack


def _describe(ids: range) -> str:
    if len(ids) == 0:
        return "no partitions"
    return f"partitions {ids.start}..{ids.stop - 1}"


def _invalid(message: str) -> ControllerError:
    return ControllerError(Error.INVALID_REPLICA_ASSIGNMENT, message)
