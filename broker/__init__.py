"""The broker's partition-serving core: the replicas this broker holds and the
requests they answer.

    replica_manager  the Partition of every (topic, partition) this broker
                     replicates; metadata deltas make it leader, follower or
                     stop it (topic deletion deletes the log)
    partition        one partition's role, epochs, ISR, followers' fetch
                     state and the high watermark
    produce          validate -> append bytes -> wait for the high watermark
    fetch            consumer and follower reads, long-polled
    offsets          ListOffsets and OffsetForLeaderEpoch
    metadata         the Metadata answer, from the metadata image
    isr              pure ISR decisions: who leaves, who joins, AlterPartition
    fetcher          a follower's side of replication: requests to build,
                     responses to apply (truncate, append, learn the HW)

The modules above hold no sockets, processes or timers. The shell around
them, run by `kraftlog server` for the broker role:

    server             BrokerServer: the parts below, wired to the node's
                       metadata image; BrokerSettings
    lifecycle          registration, heartbeats, controlled shutdown
    isr_updates        the AlterPartition loop
    controller_client  requests to the active controller (NOT_CONTROLLER
                       answers name it)
    service            the KafkaBroker gRPC service; admin requests forwarded
    replica_fetcher    the follower's fetch loops (transport injected)
    peer_clients       that transport: gRPC to the leaders
    log_jobs           the LogManager's periodic flush, retention,
                       checkpoints and cleaning
    groups/            the group coordinator (KIP-848 consumer groups,
                       committed offsets in __consumer_offsets): a pure
                       state machine and assignors, Kafka's record schemas,
                       the shell that loads, writes and expires, the gRPC
                       GroupCoordinator service

All of it runs on one asyncio event loop; waits are futures completed by
appends and high watermark moves, never polling.
"""
