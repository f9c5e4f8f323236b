"""Simulated brokers: registration, heartbeats, a lagging metadata view, ISR churn as leaders, zombies."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import Error
from metadata_quorum.features import supported_records
from metadata_quorum.image import PartitionState

from .checker import fail

if TYPE_CHECKING:
    from .schedule import ControllerSim

CLUSTER_ID = "sim-cluster"


@dataclass
class SimBroker:
    broker_id: int
    rack: Optional[str]
    alive: bool = False
    incarnation: int = 0
    epoch: Optional[int] = None  # None until this incarnation's registration is answered
    metadata_offset: int = -1    # how far it has applied the metadata log
    shutting_down: bool = False
    deaf_until: int = 0          # its heartbeats are lost until then
    lagging: bool = False        # a follower that stopped fetching: leaders drop it from ISRs
    old_epochs: list[int] = field(default_factory=list)  # every epoch it was ever given
    # KIP-966: the epoch its clean-shutdown marker holds (-1: it crashed, or
    # a hostile value), and whether its next registration follows a crash.
    previous_epoch: int = -1
    crashed: bool = False

    @property
    def incarnation_id(self) -> str:
        return f"b{self.broker_id}-i{self.incarnation}"


class BrokerFleet:
    def __init__(self, sim: "ControllerSim", count: int, racks: Optional[tuple[str, ...]]) -> None:
        self.sim = sim
        self.brokers = {i: SimBroker(i, None if racks is None else racks[i % len(racks)]) for i in range(count)}
        # (topic id, partition id) -> [(offset, state)], for brokers' stale views
        self.history: dict[tuple[bytes, int], list[tuple[int, PartitionState]]] = {}

    def remember(self, record: mpb.MetadataRecord, offset: int) -> None:
        """Keep every partition state, so that a broker can see the metadata as of its own offset."""
        kind = record.WhichOneof("record")
        if kind in ("partition", "partition_change"):
            rec = getattr(record, kind)
            key = (rec.topic_id, rec.partition_id)
            state = self.sim.image.partition(*key)
            assert state is not None
            self.history.setdefault(key, []).append((offset, state))
        elif kind == "remove_topic":
            for key in [k for k in self.history if k[0] == record.remove_topic.topic_id]:
                del self.history[key]

    def view(self, broker: SimBroker, key: tuple[bytes, int]) -> Optional[PartitionState]:
        """The partition as `broker` last saw it."""
        states = self.history.get(key)
        if not states:
            return None
        i = bisect_right(states, broker.metadata_offset, key=lambda s: s[0])
        return states[i - 1][1] if i else None

    def up(self) -> list[SimBroker]:
        return [b for b in self.brokers.values() if b.alive and b.epoch is not None]

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self, broker: SimBroker) -> None:
        broker.alive = True
        broker.incarnation += 1
        broker.epoch = None
        broker.metadata_offset = -1
        broker.shutting_down = False
        broker.lagging = False
        self.sim.stats["broker starts"] += 1
        self.register(broker, broker.incarnation)

    def crash(self, broker: SimBroker) -> None:
        """The process dies without a clean shutdown: no marker, its unflushed tails lost."""
        broker.alive = False
        broker.crashed = True
        rng = self.sim.rng
        others = [e for b in self.brokers.values() if b is not broker for e in b.old_epochs[-1:]]
        # -1 (no marker), or what a hostile or broken broker might send instead.
        broker.previous_epoch = rng.choice((-1, -1, -1, -2, 2**62, *(others[:1] or [-1]), *broker.old_epochs[:1]))
        registered = self.sim.image.brokers.get(broker.broker_id)
        if registered is not None and broker.previous_epoch == registered.broker_epoch:
            broker.previous_epoch = -1  # only a clean shutdown leaves its own epoch

    def register(self, broker: SimBroker, incarnation: int) -> None:
        sim = self.sim
        if not broker.alive or broker.incarnation != incarnation or broker.epoch is not None:
            return
        request = cpb.BrokerRegistrationRequest(
            broker_id=broker.broker_id, cluster_id=CLUSTER_ID, incarnation_id=broker.incarnation_id,
            listeners=[mpb.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9092 + broker.broker_id)],
            features=supported_records(), previous_broker_epoch=broker.previous_epoch)
        if broker.rack is not None:
            request.rack = broker.rack
        response = sim.submit(f"register {broker.incarnation_id}", sim.controller.handle_registration(request, sim.now))
        assert isinstance(response, cpb.BrokerRegistrationResponse)
        sim.stats[f"registration {Error(response.error_code).name}"] += 1
        if response.error_code == Error.NONE:
            broker.old_epochs.append(response.broker_epoch)
            if broker.crashed:
                broker.crashed = False
                sim.logs.registered_after_crash(broker.broker_id)
        if response.error_code == Error.NONE and sim.rng.random() >= sim.response_loss:
            broker.epoch = response.broker_epoch
            sim.call_at(sim.now + sim.rng.randint(1, 200), lambda: self.heartbeat(broker, incarnation))
        else:
            sim.call_at(sim.now + sim.rng.randint(300, 1500), lambda: self.register(broker, incarnation))

    def heartbeat(self, broker: SimBroker, incarnation: int) -> None:
        sim = self.sim
        if not broker.alive or broker.incarnation != incarnation or broker.epoch is None:
            return
        sim.call_at(sim.now + sim.config.broker_heartbeat_interval_ms, lambda: self.heartbeat(broker, incarnation))
        if sim.rng.random() < 0.7:
            broker.metadata_offset = sim.image.offset  # it fetched the metadata log meanwhile
        if sim.now < broker.deaf_until or sim.rng.random() < sim.heartbeat_loss:
            sim.stats["heartbeats lost"] += 1
            return
        request = cpb.BrokerHeartbeatRequest(
            broker_id=broker.broker_id, broker_epoch=broker.epoch,
            current_metadata_offset=broker.metadata_offset, want_shut_down=broker.shutting_down)
        flags = " (shutting down)" if broker.shutting_down else ""
        response = sim.submit(f"heartbeat {broker.incarnation_id} at offset {broker.metadata_offset}{flags}",
                              sim.controller.handle_heartbeat(request, sim.now))
        assert isinstance(response, cpb.BrokerHeartbeatResponse)
        sim.stats[f"heartbeat {Error(response.error_code).name}"] += 1
        if sim.rng.random() < sim.response_loss:
            return
        if response.error_code in (Error.STALE_BROKER_EPOCH, Error.BROKER_ID_NOT_REGISTERED):
            broker.epoch = None
            sim.call_at(sim.now + sim.rng.randint(10, 500), lambda: self.register(broker, incarnation))
        elif response.should_shut_down:
            if not broker.shutting_down:
                fail(f"broker {broker.broker_id} told to shut down without asking")
            broker.alive = False
            broker.previous_epoch = broker.epoch  # a clean shutdown: the marker holds its epoch
            sim.stats["controlled shutdowns completed"] += 1
            sim.note(f"broker {broker.broker_id} stops after its controlled shutdown")
            if sim.healing:
                sim.call_at(sim.now + 100, lambda: self.start(broker))

    # --- partition leaders: ISR churn ----------------------------------------------------------

    def isr_churn(self) -> None:
        """A leader, going by its own (possibly stale) view, shrinks a lagging follower out or lets one back in."""
        sim = self.sim
        if sim.now < sim.chaos_ms:
            sim.call_at(sim.now + sim.rng.randint(200, 800), self.isr_churn)
        leaders = self.up()
        if not leaders:
            return
        broker = sim.rng.choice(leaders)
        led = [key for key in sorted(self.history)
               if (v := self.view(broker, key)) is not None and v.leader == broker.broker_id]
        if not led:
            return
        key = sim.rng.choice(led)
        state = self.view(broker, key)
        assert state is not None
        proposal = self._proposal(broker, key, state)
        if proposal is None:
            return
        new_isr, recovery, what = proposal
        request = cpb.AlterPartitionRequest(broker_id=broker.broker_id, broker_epoch=broker.epoch, topics=[
            cpb.AlterPartitionRequest.TopicData(topic_id=key[0], partitions=[cpb.AlterPartitionRequest.PartitionData(
                partition_index=key[1], leader_epoch=state.leader_epoch, new_isr=new_isr,
                partition_epoch=state.partition_epoch, leader_recovery_state=recovery)])])
        current = sim.image.partition(*key)
        name = sim.image.topics[key[0]].name if key[0] in sim.image.topics else key[0].hex()[:6]
        result = sim.controller.handle_alter_partition(request)
        response = sim.submit(f"AlterPartition {name}/{key[1]} by {broker.broker_id} {what}", result)
        assert isinstance(response, cpb.AlterPartitionResponse)
        code = response.error_code or response.topics[0].partitions[0].error_code
        sim.stats[f"AlterPartition {Error(code).name}"] += 1
        if code == Error.NONE and result.records:
            assert current is not None
            sim.checker.alter_partition(sim.image, request, current)

    def _proposal(self, broker: SimBroker, key: tuple[bytes, int],
                  state: PartitionState) -> Optional[tuple[list[int], int, str]]:
        rng = self.sim.rng
        followers = [b for b in state.isr if b != broker.broker_id]
        behind = [b for b in followers if not self.brokers[b].alive or self.brokers[b].lagging]
        catching_up = [b for b in state.replicas
                       if b not in state.isr and self.brokers[b].alive and not self.brokers[b].lagging
                       and self.sim.logs.holds(key, b)]
        recovery = state.leader_recovery_state
        if recovery == mpb.RECOVERING:
            new_isr, recovery, what = list(state.isr), mpb.RECOVERED, "recovered"
        elif behind and (not catching_up or rng.random() < 0.5):
            drop = rng.choice(behind)
            new_isr, what = [b for b in state.isr if b != drop], f"shrink -{drop}"
        elif catching_up:
            add = rng.choice(catching_up)
            new_isr, what = list(state.isr) + [add], f"expand +{add}"
        else:
            return None
        if rng.random() < 0.05:  # a confused leader
            new_isr = [b for b in new_isr if b != broker.broker_id] or [99]
            what += " (malformed)"
        return new_isr, recovery, what

    # --- a request from an earlier incarnation ---------------------------------------------------

    def zombie(self, broker: SimBroker) -> None:
        """A request from an earlier incarnation arrives late: it must be refused and change nothing."""
        sim = self.sim
        current = sim.image.brokers.get(broker.broker_id)
        stale = [e for e in broker.old_epochs if current is None or e != current.broker_epoch]
        if not stale:
            return
        epoch = sim.rng.choice(stale)
        if sim.rng.random() < 0.5:
            request = cpb.BrokerHeartbeatRequest(broker_id=broker.broker_id, broker_epoch=epoch,
                                                 current_metadata_offset=sim.image.offset)
            result = sim.controller.handle_heartbeat(request, sim.now)
        else:
            alter = cpb.AlterPartitionRequest(broker_id=broker.broker_id, broker_epoch=epoch)
            for (topic_id, pid), states in sorted(self.history.items())[:2]:
                state = states[-1][1]
                alter.topics.add(topic_id=topic_id).partitions.add(
                    partition_index=pid, leader_epoch=state.leader_epoch, new_isr=[broker.broker_id],
                    partition_epoch=state.partition_epoch)
            result = sim.controller.handle_alter_partition(alter)
        response = sim.submit(f"zombie {type(result.response).__name__} from b{broker.broker_id} epoch {epoch}",
                              result)
        expected = Error.STALE_BROKER_EPOCH if current is not None else Error.BROKER_ID_NOT_REGISTERED
        if result.records or getattr(response, "error_code", None) != expected:
            fail(f"a request with the stale broker epoch {epoch} was not refused with {expected.name}")
        sim.stats[f"zombie {expected.name}"] += 1
