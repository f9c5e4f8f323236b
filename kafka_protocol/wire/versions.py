"""The APIs and versions a Kafka listener serves, as ApiVersions tells them.

A client uses, per API, the highest version both sides know. Up to the last
version before flexible versions (compact strings, tagged fields) is what
librdkafka 2.x, kafka-python 2.x and aiokafka settle on; kafka-python 3.x
goes further, and each API is served up to the first flexible version(s)
it asks for: ApiVersions 4, Metadata 12 (flexible from 9, topic ids from
10), Produce 9, Fetch 12, ListOffsets 6. The minimums are the first version each client still sends (a
record batch v2 needs Produce >= 3 and Fetch >= 4; librdkafka uses the v2
format only when those are advertised), and a minimum is never raised later:
a client that sees its version dropped gives up.

Fetch stops at 12: from 13 on a fetch names topics by id. ListOffsets
stops at 6: 7 brings the max-timestamp query (-3) the broker does not answer.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from kio.index import load_response_schema

from ..errors import Errors
from .entities import build


class ApiRange(NamedTuple):
    name: str
    min_version: int
    max_version: int


PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, INIT_PRODUCER_ID = 0, 1, 2, 3, 18, 22
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36

# api key -> what is served; an API not here is not advertised and a request
# of it closes the connection.
ADVERTISED: dict[int, ApiRange] = {
    PRODUCE: ApiRange("Produce", 3, 9),
    FETCH: ApiRange("Fetch", 4, 12),
    LIST_OFFSETS: ApiRange("ListOffsets", 1, 6),
    METADATA: ApiRange("Metadata", 1, 12),
    API_VERSIONS: ApiRange("ApiVersions", 0, 4),
    INIT_PRODUCER_ID: ApiRange("InitProducerId", 0, 1),
    # SASL (broker/kafka_api/sasl.py), listed on every listener as Kafka does.
    # Handshake v0 is followed by raw length-prefixed tokens (kafka-python
    # against brokers older than 1.0), v1 by SaslAuthenticate frames
    # (librdkafka, kafka-python 3, aiokafka). SaslAuthenticate: librdkafka
    # sends v0; v1 adds KIP-368's session lifetime; v2, its flexible form,
    # is what kafka-python 3 negotiates.
    SASL_HANDSHAKE: ApiRange("SaslHandshake", 0, 1),
    SASL_AUTHENTICATE: ApiRange("SaslAuthenticate", 0, 2),
}

UNSUPPORTED_VERSION = Errors.UNSUPPORTED_VERSION


def is_served(api_key: int, api_version: int) -> bool:
    served = ADVERTISED.get(api_key)
    return served is not None and served.min_version <= api_version <= served.max_version


def api_versions_response(version: int, error_code: int = 0) -> Any:
    """The ApiVersions answer of `version` listing every served API
    (UNSUPPORTED_VERSION answers in v0, whatever the client asked for)."""
    return build(load_response_schema(API_VERSIONS, version), {
        "error_code": error_code, "throttle_time": 0,
        "api_keys": [{"api_key": key, "min_version": r.min_version, "max_version": r.max_version}
                     for key, r in sorted(ADVERTISED.items())]})
