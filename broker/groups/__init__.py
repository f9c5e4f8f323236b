"""The group coordinator: consumer groups as KIP-848 has them (server-side,
incremental assignment), committed offsets, and the compacted, replicated
__consumer_offsets topic that holds both.

Pure (no sockets, clocks or files):
    placement   group -> partition of __consumer_offsets (Kafka's hash)
    records     the topic's records in Kafka's key/value schemas (written with
                kafka_protocol/schema_types.py, Kafka's schema primitives)
    state       groups, members, owners, offsets (and transactional offsets pending
                per producer id): built only by replaying records and markers
    assignors   uniform (sticky, balanced) and range
    reconcile   a member's next assignment: revoke first, assign once released
    machine     requests + time + topics -> responses + records
    loading     a partition's batches (plain, transactional, markers) replayed in log order

Shell:
    coordinator the machines of the partitions this broker leads: loading on
                leadership, acks=all appends, expiry timers, FindCoordinator
                (creating the topic through the controller on first use),
                deleted topics' offsets tombstoned
    service     the GroupCoordinator gRPC service of a listener
"""
