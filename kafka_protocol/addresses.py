"""HOST:PORT as every layer writes it: an IPv6 host in brackets, so the last
colon always separates the port (gRPC targets and Kafka's listeners alike)."""
from __future__ import annotations


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# Hosts on which a listener accepts connections from anywhere.
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


def local_dial_host(host: str) -> str:
    """Where this machine dials a listener bound to `host`: a wildcard bind on
    the loopback address of its family, any other host as it is."""
    if host in WILDCARD_HOSTS:
        return "::1" if host == "::" else "127.0.0.1"
    return host
