"""Kafka's binary protocol on the wire, without I/O: what a Kafka listener
(broker/kafka_api/) needs to read requests from a byte stream and write the
answers back.

- `framing`: the 4-byte size prefix of every request and response, and the
  bound on a request's size (`socket.request.max.bytes`);
- `headers`: request headers v0-v2 (client id, tagged fields) and response
  headers v0-v1;
- `versions`: the APIs and versions this broker advertises in ApiVersions,
  and the ApiVersions answers themselves;
- `entities`: building a message of one version from plain values (one
  adapter serves every version of an API);
- `codec`: a request frame to (header, request message), a response message
  to its frame.

The messages are kio's (`kio.schema.<api>.v<N>`), generated from Kafka's own
message definitions; nothing here encodes a message field by field. Every
problem with what a client sent is a `WireError` (errors.py), never anything
else, so the listener can close that one connection and serve the others.
"""
