"""The C allocator's thresholds for a server process (glibc only).

A broker moves record batches of up to megabytes: each fetch answer and
each produce request is one fresh buffer of that size. glibc gives such a
buffer its own mapping (or grows and trims the heap around it), so every
answer's pages are faulted in, zeroed by the kernel and unmapped again:
about a fifth of a broker's CPU a MB on the fetch path (perf: page faults,
memcg charging and page clearing beside the copies; docs/bench.md, target
1). Fixing the thresholds keeps such buffers in the heap and the heap's
freed top resident up to TRIM_THRESHOLD_BYTES, so the next answer reuses
the same pages. The cost is that much freed memory kept in the server's
resident set after a burst, as a JVM keeps its heap.

An operator's own GLIBC_TUNABLES malloc settings win: nothing is changed
when they name one.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys

log = logging.getLogger(__name__)

# mallopt's parameter numbers (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# Buffers up to this size come from the heap (glibc's largest allowed value
# on 64-bit; a request is at most 8 MiB, an answer at most 64 MiB).
MMAP_THRESHOLD_BYTES = 32 << 20
# Freed heap kept resident for the next buffers (glibc's default is dynamic,
# twice the largest buffer freed so far).
TRIM_THRESHOLD_BYTES = 32 << 20


def tune_allocator() -> bool:
    """Set the thresholds above; False where that is not possible or wanted
    (not glibc, or GLIBC_TUNABLES already sets malloc's)."""
    if not sys.platform.startswith("linux") or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and others have no mallopt
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    done = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1 and \
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
    if not done:
        log.warning("mallopt refused the allocator thresholds; glibc's dynamic ones stay")
    return done
