"""Prometheus metrics of one node, with Kafka's names where Kafka has them.

Each node has its own CollectorRegistry (no process-global default
registry, so a test or a tool can run several nodes' metrics side by side)
served on the node's metrics listener (`kraftlog.metrics.listener`,
HOST:PORT, off when absent). docs/metrics.md lists every metric.

    requests.py    request counts, errors and latencies, by a gRPC interceptor
    state.py       gauges over the broker, controller and Raft state, read at scrape time; the
                   broker's traffic and the controller's election counters, kept where they happen
    transactions.py  the transaction coordinator's and the partitions' transactions, at scrape time
    exposition.py  the HTTP listener, on the node's event loop
    loop_lag.py    the event loop's scheduling delay (a periodic timer's lateness)
"""
from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING, Callable, Optional

from prometheus_client import CollectorRegistry
from prometheus_client.process_collector import ProcessCollector

from metadata_quorum.metadata_state import MetadataStateMachine
from metadata_quorum.node import QuorumNode

from .exposition import start_metrics_server
from .loop_lag import LoopLagProbe
from .requests import RequestMetrics, RequestMetricsInterceptor
from .state import BrokerCollector, ControllerCollector, RaftCollector, SecurityCollector
from .transactions import TransactionCollector

if TYPE_CHECKING:  # a controller-only node never loads the broker's code (nor numba)
    from broker.server import BrokerServer

__all__ = ["NodeMetrics"]


class NodeMetrics:
    """The registry of one node: add what the node runs, then serve it."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = RequestMetrics()
        self.registry.register(self.requests)
        # process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds, ...
        ProcessCollector(registry=self.registry)
        self.interceptor = RequestMetricsInterceptor(self.requests)
        self.loop_lag = LoopLagProbe()
        self.registry.register(self.loop_lag)
        self._server: Optional[asyncio.AbstractServer] = None

    def add_quorum(self, node: QuorumNode) -> None:
        self.registry.register(RaftCollector(node))

    def add_controller(self, node: QuorumNode, metadata: MetadataStateMachine, elections: Counter) -> None:
        """`elections`: ElectionKind -> leaders elected by this node as the active controller."""
        self.registry.register(ControllerCollector(node, metadata, elections))

    def add_broker(self, broker: BrokerServer, node: QuorumNode) -> None:
        self.registry.register(BrokerCollector(broker, node))
        self.registry.register(TransactionCollector(broker))

    def add_security(self, decisions: Counter, authentications: Counter, acls: Callable[[], int]) -> None:
        self.registry.register(SecurityCollector(decisions, authentications, acls))

    async def serve(self, host: str, port: int) -> None:
        """Start the metrics listener; OSError when host:port cannot be bound."""
        self._server = await start_metrics_server(self.registry, host, port)
        self.loop_lag.start()

    async def close(self) -> None:
        self.loop_lag.stop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
