"""Numbers and lists in user-facing messages, so they read right for one and for several:
"1 segment", "2 segments"; "t1-0 has", "t1-0, t1-2 have". (The lowest layer, so the log,
the clients and the CLI can all use it.)"""
from __future__ import annotations

from typing import Iterable


def counted(n: int, noun: str, plural: str = "") -> str:
    """`counted(1, "segment")` -> "1 segment"; `counted(2, "segment")` -> "2 segments"."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def listed(items: Iterable[object], singular_verb: str, plural_verb: str) -> str:
    """`listed(["t1-0"], "has", "have")` -> "t1-0 has"; two or more -> "t1-0, t1-2 have"."""
    names = [str(item) for item in items]
    return f"{', '.join(names)} {singular_verb if len(names) == 1 else plural_verb}"
