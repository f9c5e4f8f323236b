"""Kafka's binary protocol on a broker listener (`kraftlog.kafka.protocol.listeners`),
in front of the same services the gRPC listeners serve (KafkaBroker,
GroupCoordinator, TransactionCoordinator: ClientServices in broker/server.py).

- `listener.py`: the asyncio server: frames in, one request at a time per
  connection, answers out in request order;
- `apis.py`: which adapter serves which API;
- one adapter module per API or family of APIs (`metadata.py`,
  `produce.py`, `fetch.py`, `list_offsets.py`, `init_producer_id.py`;
  admin: `topics_admin.py`, `configs.py`, `cluster.py`, `delete_records.py`,
  `acls.py`, `user_admin.py`; transactions: `transactions.py`; groups:
  `find_coordinator.py`, `offset_commit.py`, `offset_fetch.py`,
  `classic_group.py`, `group_admin.py`, `consumer_group.py`; `results.py`
  spreads a forwarded request's request-level error over its items): a kio request becomes the
  broker's protobuf request, the service method answers it (with its
  authorization, quotas and readiness check), and the protobuf answer
  becomes the kio response of the version asked for;
- `context.py`: what the service reads of a call (peer, client id), for a
  request that came over a Kafka connection;
- `sasl.py`: SaslHandshake/SaslAuthenticate and which requests a connection
  may send before and after its login (the listener's TLS comes from
  security/ssl_context.py).

The wire format itself (framing, headers, the version table, kio's codecs)
is kafka_protocol/wire/, without I/O. Record batches pass through as bytes.
"""
