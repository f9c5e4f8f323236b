"""What can be wrong with the bytes a Kafka client sent."""
from __future__ import annotations


class WireError(Exception):
    """A frame or request that cannot be read: the connection is closed."""


class UnsupportedRequest(WireError):
    """A well-framed request of an API or version this broker does not
    serve. ApiVersions answers it (UNSUPPORTED_VERSION with what is
    supported, so the client retries lower); any other API closes the connection."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"api key {api_key} version {api_version} is not served here")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
