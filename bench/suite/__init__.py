"""The side-by-side benchmark suite (`kraftlog bench`, `make bench`).

kraftlog, the physical limits of this machine (disk with fdatasync, TCP
loopback, a gRPC-Python streaming ceiling) and two peers (Redis Streams,
NATS JetStream), all started by the suite itself on 127.0.0.1 and measured
in the same run, so that the ratios between them hold on a noisy machine.
kraftlog is driven by its own client over gRPC and by librdkafka
(confluent-kafka, librdkafka.py) over the brokers' Kafka-protocol listener.
runner.py is the entry point; each system has its own module.
"""
from __future__ import annotations

from pathlib import Path

# the checkout: the suite reads deploy/local.yaml and starts peers from here
REPO_ROOT = Path(__file__).resolve().parents[2]
