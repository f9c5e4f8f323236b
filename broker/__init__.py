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

No sockets, processes or timers live here: the gRPC service, the metadata
observer and the replica fetcher loop call in from the server shell. All of
it runs on one asyncio event loop; waits are futures completed by appends
and high watermark moves, never polling.
"""
