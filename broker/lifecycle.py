"""The broker's life as the active controller sees it: registration,
heartbeats, and controlled shutdown.

- Register (a new incarnation id per process, the advertised listeners,
  the rack): the answer is the broker epoch. Until it comes, retry every
  heartbeat interval: a DUPLICATE_BROKER_REGISTRATION (our previous
  incarnation's session has not expired yet) resolves itself that way.
- Heartbeat every `broker.heartbeat.interval.ms`, reporting how far the
  metadata image is applied. The controller unfences us once that reaches
  our registration; until a registration is first unfenced the heartbeats
  come sooner (STARTING_HEARTBEAT_S, doubling up to the interval), so a
  starting broker is not left fenced for a whole interval after it caught
  up; `caught_up` is set at the first such answer (the
  broker publishes its image to the replicas from then on, as Kafka's
  broker waits for its initial catch-up). A STALE_BROKER_EPOCH or
  BROKER_ID_NOT_REGISTERED answer means our registration is gone:
  register again.
- Controlled shutdown: heartbeats with want_shut_down, more often, until
  the controller answers should_shut_down (it has moved every leadership
  away), bounded by the caller's timeout. When the metadata quorum has had
  no leader for NO_QUORUM_GIVE_UP_S (or a quarter of that timeout, if less)
  - the last node of a combined cluster stopping: no majority is left to
  elect one - nobody can answer, and the wait ends then instead of sitting
  out the timeout.
- INCONSISTENT_CLUSTER_ID is fatal: this broker belongs to another cluster.
- The registration carries the feature levels this software supports
  (metadata_quorum/features.py); UNSUPPORTED_VERSION means the cluster
  finalized a level it does not: logged as an error, retried.
- And KIP-966's previous_broker_epoch: the epoch the log directory's
  clean-shutdown marker held at start (-1: none, an unclean shutdown), the
  same on every registration of this process.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Callable, Optional, Sequence

from kafka_protocol.errors import error_name
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller.errors import Error
from metadata_quorum.features import supported_records
from metadata_quorum.image import Endpoint

from .controller_client import ControllerClient, ControllerUnavailable

log = logging.getLogger(__name__)

SHUTDOWN_HEARTBEAT_S = 0.25  # while a controlled shutdown waits for the controller
STARTING_HEARTBEAT_S = 0.025  # the first wait while a registration is not yet unfenced
# No quorum leader for this long (three of Kafka's default election
# timeouts): no election is under way that could give one.
NO_QUORUM_GIVE_UP_S = 3.0
REREGISTER = (Error.STALE_BROKER_EPOCH, Error.BROKER_ID_NOT_REGISTERED)


class BrokerLifecycle:
    def __init__(self, broker_id: int, cluster_id: str, listeners: Sequence[Endpoint], rack: Optional[str],
                 controllers: ControllerClient, metadata_offset: Callable[[], int], *,
                 heartbeat_interval_ms: int, request_timeout_s: float, previous_broker_epoch: int = -1) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.listeners = tuple(listeners)
        self.rack = rack
        self.controllers = controllers
        self.metadata_offset = metadata_offset
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.request_timeout_s = request_timeout_s
        self.incarnation_id = uuid.uuid4().hex
        self.previous_broker_epoch = previous_broker_epoch
        self.broker_epoch = -1
        self.fenced = True
        self.caught_up = asyncio.Event()
        self.failure: Optional[str] = None
        self.failed = asyncio.Event()
        self._want_shut_down = False
        self._starting_wait_s: Optional[float] = None  # set from registration until first unfenced
        self._shut_down = asyncio.Event()
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: Optional[asyncio.Task[None]] = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"broker-lifecycle-{self.broker_id}")
        self._task.add_done_callback(self._ended)

    def _ended(self, task: "asyncio.Task[None]") -> None:
        # Registration and heartbeats are the broker's lease: a task that ends
        # while the broker runs must stop it loudly, never leave it up, silent
        # and fenced (an exception it let through, or a cancellation that was
        # not ours).
        if self._stopping or self.failure is not None or self._shut_down.is_set():
            return
        reason = "cancelled" if task.cancelled() else repr(task.exception())
        self._fail(f"the registration and heartbeat task ended unexpectedly ({reason})")

    async def stop(self) -> None:
        # The flag too: in Python 3.11 asyncio.wait_for swallows a cancellation
        # that arrives as the event it waits on is set (the _wake of a
        # controlled shutdown), and the loop would go on.
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def controlled_shutdown(self, timeout_s: float,
                                  quorum_leader: Optional[Callable[[], Optional[int]]] = None) -> bool:
        """Ask the controller to move our leaderships away; True once it says
        we may stop, False if it did not within `timeout_s`, or if
        `quorum_leader()` (the metadata quorum's leader as this node knows
        it) stayed None for NO_QUORUM_GIVE_UP_S (at most a quarter of the timeout)."""
        if self.broker_epoch < 0 or self.failure is not None:
            return True  # not registered: nothing can be led here
        self._want_shut_down = True
        self._wake.set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        leaderless_since: Optional[float] = None
        give_up_s = min(NO_QUORUM_GIVE_UP_S, timeout_s / 4)
        while not self._shut_down.is_set():
            now = loop.time()
            if now >= deadline:
                log.warning("broker %d: no controlled shutdown within %gs; stopping anyway",
                            self.broker_id, timeout_s)
                return False
            if quorum_leader is not None and quorum_leader() is None:
                leaderless_since = now if leaderless_since is None else leaderless_since
                if now - leaderless_since >= give_up_s:
                    log.warning("broker %d: the metadata quorum has had no leader for %gs: no controller can "
                                "answer; skipping the controlled shutdown", self.broker_id, give_up_s)
                    return False
            else:
                leaderless_since = None
            try:
                await asyncio.wait_for(self._shut_down.wait(), min(SHUTDOWN_HEARTBEAT_S, deadline - now))
            except asyncio.TimeoutError:
                pass
        log.info("broker %d: controlled shutdown done", self.broker_id)
        return True

    async def _run(self) -> None:
        while self.failure is None and not self._shut_down.is_set() and not self._stopping:
            if self.broker_epoch < 0:
                await self._register()
                if self.broker_epoch >= 0:
                    continue  # the first heartbeat at once: it may unfence us
            else:
                await self._heartbeat()
            await self._sleep()

    async def _sleep(self) -> None:
        interval = self.heartbeat_interval_s
        if self._want_shut_down:
            interval = min(interval, SHUTDOWN_HEARTBEAT_S)
        elif self._starting_wait_s is not None and self.broker_epoch >= 0:
            interval = min(interval, self._starting_wait_s)
            self._starting_wait_s *= 2
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), interval)
        except asyncio.TimeoutError:
            pass

    async def _register(self) -> None:
        request = cpb.BrokerRegistrationRequest(
            broker_id=self.broker_id, cluster_id=self.cluster_id, incarnation_id=self.incarnation_id,
            listeners=[mpb.BrokerEndpoint(name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol)
                       for e in self.listeners], features=supported_records(),
            previous_broker_epoch=self.previous_broker_epoch)
        if self.rack is not None:
            request.rack = self.rack
        try:
            response = await self.controllers.call("BrokerRegistration", request, timeout_s=self.request_timeout_s)
        except ControllerUnavailable as exc:
            log.warning("broker %d: registration: %s", self.broker_id, exc)
            return
        if response.error_code == Error.NONE:
            self.broker_epoch = response.broker_epoch
            self._starting_wait_s = STARTING_HEARTBEAT_S
            log.info("broker %d registered with controller %d: broker epoch %d, incarnation %s", self.broker_id,
                     response.controller_id, self.broker_epoch, self.incarnation_id)
        elif response.error_code == Error.INCONSISTENT_CLUSTER_ID:
            self._fail(f"the controllers refuse this broker: {response.error_message}")
        elif response.error_code == Error.UNSUPPORTED_VERSION:
            # As Kafka's broker: keep trying (the level stays); the operator runs newer software here.
            log.error("broker %d: registration refused: this software does not support the cluster's finalized "
                      "feature levels: %s", self.broker_id, response.error_message)
        else:
            log.warning("broker %d: registration refused: %s %s", self.broker_id,
                        error_name(response.error_code), response.error_message)

    async def _heartbeat(self) -> None:
        request = cpb.BrokerHeartbeatRequest(
            broker_id=self.broker_id, broker_epoch=self.broker_epoch,
            current_metadata_offset=self.metadata_offset(), want_shut_down=self._want_shut_down)
        try:
            response = await self.controllers.call("BrokerHeartbeat", request, timeout_s=self.request_timeout_s)
        except ControllerUnavailable as exc:
            log.warning("broker %d: heartbeat: %s", self.broker_id, exc)
            return
        if response.error_code in REREGISTER:
            log.warning("broker %d: heartbeat refused (%s %s): registering again", self.broker_id,
                        error_name(response.error_code), response.error_message)
            self.broker_epoch = -1
            return
        if response.error_code != Error.NONE:
            log.warning("broker %d: heartbeat refused: %s %s", self.broker_id,
                        error_name(response.error_code), response.error_message)
            return
        if response.is_caught_up and not self.caught_up.is_set():
            log.info("broker %d caught up with the metadata log (offset %d)", self.broker_id,
                     request.current_metadata_offset)
            self.caught_up.set()
        if not response.is_fenced:
            self._starting_wait_s = None
        if response.is_fenced != self.fenced:
            self.fenced = response.is_fenced
            log.info("broker %d is %s", self.broker_id, "fenced" if self.fenced else "unfenced")
        if response.should_shut_down and self._want_shut_down:
            self._shut_down.set()

    def _fail(self, reason: str) -> None:
        log.critical("broker %d stops: %s", self.broker_id, reason)
        self.failure = reason
        self.failed.set()
