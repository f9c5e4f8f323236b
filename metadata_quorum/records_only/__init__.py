"""The quorum without the controller: a test and benchmark mode, not a production one.

A controller started with `kraftlog.quorum.state.machine: records` applies
committed entries into `RecordStore` (opaque records, kept with their
offsets) instead of the metadata image, and serves the `QuorumLog` RPCs
(`quorum_log_service.py`: Append through the leader, ReadCommitted from any
node) instead of `KRaftController`. Kafka keeps the same split:
`kafka.tools.TestRaftServer` runs KRaft under a throwaway state machine to
measure it.

Who needs it, and why the controller cannot stand in:
- `make bench-quorum` (bench/quorum.py) measures Raft itself: commit latency
  and throughput with 64 appends in flight. The active controller decides
  one request at a time, so through it the benchmark would measure the
  controller's queue, not the quorum.
- the process-level quorum tests (tests/metadata_quorum/test_real_quorum.py,
  test_server_bad_input.py) and the quorum demo (`python -m kraftlog.demo
  quorum`) append records of their choosing and compare, record by record,
  what each node applied, across kill -9, SIGSTOP, snapshots and restarts;
  no controller RPC shows a follower's applied state.
- tests/adversarial sends hostile QuorumLog requests to a one-voter
  records-only quorum, and checks that a cluster's controllers do not serve
  QuorumLog at all.

Nothing in a cluster with brokers uses it: a broker refuses to start in this
mode (it needs the metadata image), and `deploy/` runs the metadata image
everywhere.
"""
