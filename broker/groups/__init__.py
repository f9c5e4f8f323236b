"""The group coordinator: consumer groups as KIP-848 has them (server-side,
incremental assignment) and classic groups (JoinGroup/SyncGroup, the
assignor on the leader), committed offsets, and the compacted, replicated
__consumer_offsets topic that holds them.

Pure (no sockets, clocks or files):
    placement   group -> partition of __consumer_offsets (Kafka's hash)
    records     the topic's records in Kafka's key/value schemas (written with
                kafka_protocol/schema_types.py, Kafka's schema primitives)
    state       groups, members, owners, offsets (and transactional offsets pending
                per producer id): built only by replaying records and markers
    assignors   uniform (sticky, balanced) and range
    reconcile   a member's next assignment: revoke first, assign once released
    classic     the classic group protocol of one group: join phases, the leader's
                sync, session timeouts, static members; answers under the shell's tokens
    machine     requests + time + topics -> responses + records
    loading     a partition's batches (plain, transactional, markers) replayed in log order

Shell:
    coordinator the machines of the partitions this broker leads: loading on
                leadership, acks=all appends, expiry timers, the classic requests
                waiting for their answers, FindCoordinator
                (creating the topic through the controller on first use),
                deleted topics' offsets tombstoned
    service     the GroupCoordinator gRPC service of a listener
"""
