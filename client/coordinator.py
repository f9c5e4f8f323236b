"""Finding and calling a group's or a transactional id's coordinator
(Kafka's FindCoordinator, key_type 0 or 1, then every request for that key
to that broker: the GroupCoordinator service for a group, the
TransactionCoordinator service - and KafkaBroker's InitProducerId - for a
transactional id).

The coordinator is the leader of the key's `__consumer_offsets` (or
`__transaction_state`) partition, so it moves when that leader does:
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a broker that cannot be
reached make the client forget it and ask again.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Optional

import grpc

from kafka_protocol.errors import Errors
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import groups_pb2_grpc as gpb_grpc

from .errors import KafkaError, NetworkError, error_for_code
from .metadata import TRANSPORT_FAILURES, Metadata

log = logging.getLogger(__name__)

# Answers after which the coordinator must be looked up again.
GROUP, TRANSACTION = 0, 1  # Kafka's CoordinatorType (FindCoordinator key_type)
KEY_KIND = {GROUP: "group", TRANSACTION: "transactional id"}
COORDINATOR_MOVED = frozenset({Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR})
RETRY_SAME = frozenset({Errors.COORDINATOR_LOAD_IN_PROGRESS})


class CoordinatorUnavailable(Exception):
    """This attempt found no coordinator or it did not answer: retry after a backoff."""


class Coordinator:
    def __init__(self, metadata: Metadata, group_id: str, *, request_timeout_s: float, backoff_s: float,
                 key_type: int = GROUP, stub_factory: Callable[[Any], Any] = gpb_grpc.GroupCoordinatorStub) -> None:
        self._metadata = metadata
        self.group_id = group_id  # the key: a group id, or a transactional id with key_type 1
        self.key_type = key_type
        self._stub_factory = stub_factory  # the service its calls go to
        self._timeout_s = request_timeout_s
        self._backoff_s = backoff_s
        self.node_id: Optional[int] = None
        self.address: Optional[str] = None

    def invalidate(self) -> None:
        if self.address is not None:
            log.info("%s %s: coordinator %s (node %s) forgotten", KEY_KIND[self.key_type], self.group_id,
                     self.address, self.node_id)
        self.node_id = self.address = None

    async def _find(self) -> str:
        if not self._metadata.brokers:
            await self._metadata.update()
        request = gpb.FindCoordinatorRequest(key_type=self.key_type, keys=[self.group_id])
        problems = []
        for address in dict.fromkeys(self._metadata.brokers.values()):
            stub = gpb_grpc.GroupCoordinatorStub(self._metadata.channel(address))
            try:
                response = await stub.FindCoordinator(request, timeout=min(self._timeout_s, 5.0))
            except grpc.aio.AioRpcError as exc:
                _raise_unimplemented(exc, address, "FindCoordinator")
                problems.append(f"{address} {exc.code().name}")
                continue
            [found] = response.coordinators
            if found.error_code:
                problems.append(f"{address} {error_for_code(found.error_code, found.error_message)}")
                if found.error_code in COORDINATOR_MOVED | RETRY_SAME:
                    continue
                raise error_for_code(found.error_code, f"FindCoordinator {self.group_id}: {found.error_message}")
            self.node_id, self.address = found.node_id, f"{found.host}:{found.port}"
            return self.address
        self._metadata.request_update()
        raise CoordinatorUnavailable(f"no coordinator for {KEY_KIND[self.key_type]} {self.group_id} "
                                     f"({'; '.join(problems) or 'no broker'})")

    async def call_once(self, method: str, request: Any, timeout_s: Optional[float] = None,
                        stub_factory: Optional[Callable[[Any], Any]] = None) -> Any:
        """One attempt: the response, or CoordinatorUnavailable (coordinator
        forgotten when it moved or could not be reached). `stub_factory`:
        another service of the coordinator's broker (InitProducerId is KafkaBroker's)."""
        address = self.address or await self._find()
        stub = (stub_factory or self._stub_factory)(self._metadata.channel(address))
        try:
            response = await getattr(stub, method)(request, timeout=timeout_s or self._timeout_s)
        except grpc.aio.AioRpcError as exc:
            _raise_unimplemented(exc, address, method)
            if exc.code() not in TRANSPORT_FAILURES:
                raise
            self.invalidate()
            raise CoordinatorUnavailable(f"{method} to {address}: {exc.code().name}") from None
        code = getattr(response, "error_code", 0)
        if code in COORDINATOR_MOVED:
            self.invalidate()
            raise CoordinatorUnavailable(f"{method} to {address}: {error_for_code(code, '')}")
        if code in RETRY_SAME:
            raise CoordinatorUnavailable(f"{method} to {address}: {error_for_code(code, '')}")
        return response

    async def call(self, method: str, make_request: Callable[[], Any], deadline: float) -> Any:
        """Retry until the coordinator answers or `deadline` (monotonic) passes.
        `make_request` is called for each attempt (a member epoch may change)."""
        last = ""
        while True:
            try:
                return await self.call_once(method, make_request(),
                                            max(0.1, min(self._timeout_s, deadline - time.monotonic())))
            except (CoordinatorUnavailable, NetworkError) as exc:
                last = str(exc)
            if time.monotonic() + self._backoff_s >= deadline:
                raise error_for_code(Errors.REQUEST_TIMED_OUT, f"{method} for {KEY_KIND[self.key_type]} "
                                     f"{self.group_id}: no answer in time ({last})")
            await asyncio.sleep(self._backoff_s)


def _raise_unimplemented(exc: grpc.aio.AioRpcError, address: str, method: str) -> None:
    if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
        raise error_for_code(Errors.UNSUPPORTED_VERSION,
                             f"{address} does not offer {method} (UNIMPLEMENTED)") from None


__all__ = ["Coordinator", "CoordinatorUnavailable", "KafkaError"]
