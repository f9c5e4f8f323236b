"""Kafka's vocabulary, shared by every layer of kraftlog.

What a Kafka broker, controller and client all have to agree on lives here
and nowhere else: the record batch v2 format (`batch`, `records`, `varint`,
`compression`, and `record_check`, the compiled walk of a batch's records),
Kafka's error codes (`errors`), the parsers of setting values
(`config_values`), the internal topics' names (`internal_topics`), and the
framing kraftlog puts around Kafka's data on gRPC (`fetch_framing`,
`grpc_serving`), and Kafka's own binary protocol without I/O (`wire/`:
framing, headers, the served versions, kio's message codecs).

It may import the generated `kraftlog_api` and third-party libraries, never
another kraftlog package (tests/test_layering.py checks that against the
table in docs/architecture.md).
"""
