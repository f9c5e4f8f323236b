"""HOST:PORT as every layer writes it: an IPv6 host in brackets, so the last
colon always separates the port (gRPC targets and Kafka's listeners alike)."""
from __future__ import annotations


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
