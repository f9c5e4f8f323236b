"""Transactions on one broker, read at scrape time: the transaction
coordinator's shards led here, and the open transactions at the partitions
led here.

Kafka has no MBeans for these (its transaction coordinator exports only
partition load times), so the names are kraftlog_*:

    kraftlog_transaction_coordinator_transactions{state}   ids per state (Kafka's names)
    kraftlog_transaction_coordinator_pending_markers       transactions whose markers are in flight
    kraftlog_transaction_coordinator_completed_total{result}  commit / abort, Complete* written
    kraftlog_transaction_coordinator_timed_out_total       aborted by the coordinator on their timeout
    kraftlog_transaction_partition_open_transactions       open transactions over the partitions led here
    kraftlog_transaction_partition_unstable_partitions     partitions led here whose LSO is below the HW
    kraftlog_transaction_partition_lso_lag_max / _sum      high watermark - last stable offset, in offsets

The partition side is aggregated over the partitions this broker leads, not
labelled per partition: __consumer_offsets alone has 50 partitions and
__transaction_state 50 more, and a series per partition would multiply the
page by the cluster's partition count for a number that is 0 almost always.
The max finds a stuck transaction; DescribeProducers (`kraftlog
transactions describe-producers`) then tells which partition and producer.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from broker.transactions.records import TxnState

from .state import gauge

if TYPE_CHECKING:  # a controller-only node never loads the broker's code (nor numba)
    from broker.server import BrokerServer

COORDINATOR = "kraftlog_transaction_coordinator_"
PARTITION = "kraftlog_transaction_partition_"


class TransactionCollector:
    def __init__(self, broker: BrokerServer) -> None:
        self.broker = broker

    def collect(self) -> Iterator[Metric]:
        yield from self._coordinator()
        yield from self._partitions()

    def _coordinator(self) -> Iterator[Metric]:
        coordinator = self.broker.transactions
        shards = [s for s in coordinator.shards.values() if s.current and s.loaded]
        states = Counter(txn.value.state for shard in shards for txn in shard.machine.txns.values())
        family = GaugeMetricFamily(COORDINATOR + "transactions",
                                   "Transactional ids coordinated here, by state (open: Ongoing and Prepare*)",
                                   labels=["state"])
        for state in TxnState:
            family.add_metric([state.kafka_name], states[state])
        yield family
        yield gauge(COORDINATOR + "pending_markers",
                    "Ended transactions whose COMMIT/ABORT markers are being written from here",
                    sum(len(shard.markers) for shard in shards))
        completed = CounterMetricFamily(COORDINATOR + "completed",
                                        "Transactions completed here (markers written, Complete* appended)",
                                        labels=["result"])
        completed.add_metric(["commit"], coordinator.completed[True])
        completed.add_metric(["abort"], coordinator.completed[False])
        yield completed
        yield CounterMetricFamily(COORDINATOR + "timed_out",
                                  "Transactions this coordinator aborted because they outlived their timeout",
                                  value=coordinator.timed_out)

    def _partitions(self) -> Iterator[Metric]:
        open_txns = unstable = lag_max = lag_sum = 0
        for partition in self.broker.replicas.partitions.values():
            if not partition.is_leader or not partition.opened:
                continue  # an unopened replica has no producers
            open_txns += len(partition.producers.ongoing)
            lag = partition.high_watermark - partition.last_stable_offset
            if lag > 0:
                unstable += 1
                lag_sum += lag
                lag_max = max(lag_max, lag)
        yield gauge(PARTITION + "open_transactions",
                    "Open transactions (producers with a first offset and no marker yet) at the partitions led here",
                    open_txns)
        yield gauge(PARTITION + "unstable_partitions",
                    "Partitions led here whose last stable offset is below their high watermark", unstable)
        yield gauge(PARTITION + "lso_lag_max",
                    "Largest high watermark - last stable offset of the partitions led here", lag_max)
        yield gauge(PARTITION + "lso_lag_sum",
                    "Sum of high watermark - last stable offset over the partitions led here", lag_sum)
