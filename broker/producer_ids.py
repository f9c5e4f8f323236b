"""InitProducerId: producer ids and epochs for idempotent producers.

Ids come from blocks the active controller allocates through the metadata
log (AllocateProducerIds: a ProducerIdsRecord moves the cluster's next id
forward), so no two brokers ever hand out the same id, before or after a
restart. As Kafka's RPCProducerIdManager, the next block is asked for once
90% of the current one is used, so InitProducerId rarely waits for the
controller.

Without a transactional.id the answer is always a new id at epoch 0, also
when the producer names the id and epoch it has (KIP-360's bump after an
abortable error), as Kafka answers: bumping a named id's epoch here would let
anyone fence any idempotent producer by naming its id, since an idempotent id
has no owner a broker could check. A transactional.id goes to the transaction
coordinator (broker/transactions/), which owns its id and bumps its epoch.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Awaitable, Callable, Optional

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.batch import MAX_PRODUCER_EPOCH

from .controller_client import ControllerClient, ControllerUnavailable
from .errors import BrokerError, Error

log = logging.getLogger(__name__)

PREFETCH_RATIO = 0.9
FAILURE_BACKOFF_S = 0.2
# InitProducerId waits this long at most for a block, then answers
# COORDINATOR_LOAD_IN_PROGRESS (retriable) rather than hold the client.
BLOCK_WAIT_S = 5.0
MAX_EPOCH = MAX_PRODUCER_EPOCH  # producer epochs are int16
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@dataclass(slots=True)
class ProducerIdBlock:
    start: int
    length: int
    next_id: int

    @property
    def end(self) -> int:
        return self.start + self.length

    @property
    def exhausted(self) -> bool:
        return self.next_id >= self.end

    @property
    def prefetch_due(self) -> bool:
        return self.next_id - self.start >= PREFETCH_RATIO * self.length


class ProducerIdBlocks:
    """The blocks of ids this broker holds: the current one and one prefetched."""

    def __init__(self) -> None:
        self.current: Optional[ProducerIdBlock] = None
        self.prefetched: Optional[ProducerIdBlock] = None

    def add(self, start: int, length: int) -> None:
        if length <= 0 or start < 0:
            raise ValueError(f"producer id block [{start}, {start + length}) is empty or negative")
        block = ProducerIdBlock(start, length, start)
        if self.current is None or self.current.exhausted:
            self.current = block
        else:
            self.prefetched = block

    def take(self) -> Optional[int]:
        """The next id, None when no block has one left."""
        if (self.current is None or self.current.exhausted) and self.prefetched is not None:
            self.current, self.prefetched = self.prefetched, None
        if self.current is None or self.current.exhausted:
            return None
        pid = self.current.next_id
        self.current.next_id += 1
        return pid

    @property
    def wants_block(self) -> bool:
        """Ask the controller now: nothing prefetched, and the current block
        is missing, used up, or 90% used."""
        return self.prefetched is None and (self.current is None or self.current.prefetch_due)


Allocate = Callable[[], Awaitable[tuple[int, int]]]


class ProducerIdManager:
    """Hands out ids from ProducerIdBlocks; `allocate` asks the controller
    for a block (start, length) and raises on failure. At most one request
    for a block is in flight."""

    def __init__(self, allocate: Allocate, *, wait_s: float = BLOCK_WAIT_S) -> None:
        self.allocate = allocate
        self.wait_s = wait_s
        self.blocks = ProducerIdBlocks()
        self._fetching: Optional[asyncio.Task[None]] = None
        self.last_failure = ""

    async def generate(self) -> int:
        """A producer id never handed out before; COORDINATOR_LOAD_IN_PROGRESS
        (retriable, as Kafka) when no block came within `wait_s`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        while True:
            pid = self.blocks.take()
            self._maybe_prefetch()
            if pid is not None:
                return pid
            remaining = deadline - loop.time()
            fetching = self._fetching
            if remaining <= 0 or fetching is None:
                raise BrokerError(Error.COORDINATOR_LOAD_IN_PROGRESS,
                                  f"no producer id block from the controller yet ({self.last_failure or 'waiting'})")
            await asyncio.wait([fetching], timeout=remaining)

    def _maybe_prefetch(self) -> None:
        if self.blocks.wants_block and (self._fetching is None or self._fetching.done()):
            self._fetching = asyncio.create_task(self._fetch_block(), name="producer-id-block")

    async def _fetch_block(self) -> None:
        try:
            start, length = await self.allocate()
            self.blocks.add(start, length)
            self.last_failure = ""
            log.info("producer id block [%d, %d) allocated", start, start + length)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the next InitProducerId asks again
            self.last_failure = str(exc)
            log.warning("cannot allocate a producer id block: %s", exc)
            await asyncio.sleep(FAILURE_BACKOFF_S)  # no new request before this task ends

    async def close(self) -> None:
        if self._fetching is not None and not self._fetching.done():
            self._fetching.cancel()
            await asyncio.gather(self._fetching, return_exceptions=True)


def controller_allocator(controllers: ControllerClient, broker_id: int, broker_epoch: Callable[[], int], *,
                         timeout_s: float) -> Allocate:
    """AllocateProducerIds to the active controller, as this broker's registration."""
    async def allocate() -> tuple[int, int]:
        request = cpb.AllocateProducerIdsRequest(broker_id=broker_id, broker_epoch=broker_epoch())
        try:
            response = await controllers.call("AllocateProducerIds", request, timeout_s=timeout_s)
        except ControllerUnavailable as exc:
            raise BrokerError(Error.REQUEST_TIMED_OUT, str(exc)) from None
        if response.error_code != Error.NONE:
            raise BrokerError(response.error_code, f"AllocateProducerIds refused by controller "
                                                   f"{response.controller_id}")
        return response.producer_id_start, response.producer_id_len
    return allocate


async def handle_init_producer_id(ids: ProducerIdManager,
                                  request: bpb.InitProducerIdRequest) -> bpb.InitProducerIdResponse:
    """A new id with epoch 0, whatever id and epoch the request names (they are only checked for shape)."""
    try:
        if request.transactional_id:
            raise BrokerError(Error.UNSUPPORTED_VERSION,
                              f"transactional.id {request.transactional_id!r}: transactions are not supported "
                              "yet; an idempotent producer needs no transactional.id")
        pid, epoch = request.producer_id, request.producer_epoch
        if pid == NO_PRODUCER_ID:
            if epoch != NO_PRODUCER_EPOCH:
                raise BrokerError(Error.INVALID_REQUEST, f"producer epoch {epoch} given without a producer id")
            return bpb.InitProducerIdResponse(producer_id=await ids.generate(), producer_epoch=0)
        if pid < 0 or not 0 <= epoch <= MAX_EPOCH:
            raise BrokerError(Error.INVALID_REQUEST, f"producer id {pid} with epoch {epoch}: expected an id "
                                                     f">= 0 with an epoch in [0, {MAX_EPOCH}], or -1 and -1")
        return bpb.InitProducerIdResponse(producer_id=await ids.generate(), producer_epoch=0)
    except BrokerError as err:
        return bpb.InitProducerIdResponse(error_code=err.error, error_message=err.message,
                                          producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH)
