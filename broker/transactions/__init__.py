"""The transaction coordinator (KIP-98 with KIP-890's epoch bump per
transaction and KIP-939's two-phase commit): transactional ids, their
producer ids and epochs, and the compacted, replicated __transaction_state
topic that holds them.

Pure (no sockets, clocks or files):
    records     TransactionLogKey/TransactionLogValue in Kafka's schemas
    machine     requests + time + fresh producer ids -> answers + records

Shell:
    coordinator the machines of the __transaction_state partitions this broker
                leads: loading on leadership, acks=all appends, the timer for
                transaction timeouts and id expiration, FindCoordinator
                (creating the topic on first use)
    markers     WriteTxnMarkers to every partition of an ended transaction,
                retried until acknowledged, then the Complete* record
    verifier    KIP-890's check for a partition leader: is this partition in
                the producer's ongoing transaction?
    service     the TransactionCoordinator gRPC service of a listener
"""
