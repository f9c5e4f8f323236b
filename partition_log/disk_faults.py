"""Disk faults and power loss for the chaos testbed: a layer under every file
a node writes in its data directories (segments, indexes, checkpoints, the
metadata quorum's log, quorum-state and snapshots).

Testbed only. It is installed by the node process at start when the
environment variable KRAFTLOG_TESTBED_DISK_FAULTS names a control folder
(`install_from_env`, called by kraftlog_server/server.py); no property of a
node's config file reaches it, so a production config cannot turn it on.
Without the variable nothing here runs and `os` is left as it is.

Installed, it wraps the `os` calls storage makes (open, dup, close, write,
pwrite, pwritev, fsync, fdatasync, ftruncate, replace, rename, unlink) for
paths under the node's data directories:

- Faults come from `<control>/faults.json`, re-read when it changes (the
  nemesis writes it): a list of rules {"op": "write"|"fsync", "errno":
  "EIO"|"ENOSPC", "path": substring, "times": n (-1: until removed),
  "mode": "error"|"short"|"torn"|"hang"}. "short" writes half of what was asked
  and returns that count (the disk filled up mid-append); "torn" writes
  half and then kills the process with SIGKILL (a crash mid-write, whose
  prefix stays in the page cache); "hang" (fsync only) never returns, as a
  dead disk's fsync, until the process is killed. An fsync that fails "poisons" its file
  as Linux does after a writeback error: later fsyncs of it report success
  but make nothing more durable (the PostgreSQL fsyncgate lesson), so a
  node that retries and carries on is caught by the next power loss.
- What was made durable is journaled, one JSON line per event, in
  `<control>/journal-<ns>-<pid>.jsonl`: the size a file had at each
  successful fsync, a file's first write since its last fsync, truncations,
  renames, unlinks, and each fault injected (`injected`). Files already present at install are durable as
  they are. `power_loss(control, roots)` (run while the node is dead)
  replays the journals and cuts every file back to its durable size; a file
  written but never fsynced is removed, as its directory entry and pages
  would be. Index pages written through mmap are not seen: index files
  are checked at load and rebuilt from the log when they do not fit it.

`flip_byte` damages one byte of a file in place (a bit rot fault).
"""
from __future__ import annotations

import errno
import json
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

ENV = "KRAFTLOG_TESTBED_DISK_FAULTS"
FAULTS_FILE = "faults.json"
JOURNAL_GLOB = "journal-*.jsonl"
OPS = ("write", "fsync")
ERRNOS = {"EIO": errno.EIO, "ENOSPC": errno.ENOSPC}
MODES = ("error", "short", "torn", "hang")

_real = {name: getattr(os, name) for name in (
    "open", "dup", "close", "write", "pwrite", "pwritev", "fsync", "fdatasync", "ftruncate",
    "replace", "rename", "unlink")}


@dataclass
class Rule:
    op: str
    errno_name: str
    path: str = ""
    times: int = -1
    mode: str = "error"

    @classmethod
    def parse(cls, raw: dict) -> "Rule":
        rule = cls(op=raw["op"], errno_name=raw.get("errno", "EIO"), path=raw.get("path", ""),
                   times=int(raw.get("times", -1)), mode=raw.get("mode", "error"))
        if rule.op not in OPS or rule.errno_name not in ERRNOS or rule.mode not in MODES:
            raise ValueError(f"bad disk fault rule {raw!r}")
        if rule.mode in ("short", "torn") and rule.op != "write" or rule.mode == "hang" and rule.op != "fsync":
            raise ValueError(f"mode {rule.mode!r} does not apply to {rule.op}: {raw!r}")
        return rule

    def to_json(self) -> dict:
        return {"op": self.op, "errno": self.errno_name, "path": self.path, "times": self.times, "mode": self.mode}


def write_rules(control: Path, rules: Sequence[Rule]) -> None:
    """Set a node's faults (the nemesis's side): replaces the rules file at once."""
    Path(control).mkdir(parents=True, exist_ok=True)  # the node may not have started yet
    tmp = Path(control) / (FAULTS_FILE + ".tmp")
    tmp.write_text(json.dumps([r.to_json() for r in rules]))
    _real["replace"](tmp, Path(control) / FAULTS_FILE)


class FaultLayer:
    def __init__(self, control: Path, roots: Iterable[Path]) -> None:
        self.control = Path(control)
        self.roots = tuple(os.path.abspath(r) + os.sep for r in roots)
        self._lock = threading.Lock()
        self._paths: dict[int, str] = {}  # open descriptor -> path, for tracked files
        self._dirty: set[str] = set()  # written since their last fsync (journaled once)
        self._poisoned: set[str] = set()  # an fsync failed: later ones make nothing durable
        self._rules: list[Rule] = []
        self._rules_mtime = -1
        self.control.mkdir(parents=True, exist_ok=True)
        name = f"journal-{time.time_ns():020d}-{os.getpid()}.jsonl"
        self._journal = _real["open"](self.control / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        for root in self.roots:  # what exists now is durable as it is
            for folder, _dirs, files in os.walk(root):
                for f in files:
                    path = os.path.join(folder, f)
                    try:
                        self._log("sync", path, size=os.stat(path).st_size)
                    except FileNotFoundError:
                        pass

    # -- bookkeeping ---------------------------------------------------------
    def tracked(self, path: object) -> str | None:
        if isinstance(path, int):
            return None
        text = os.path.abspath(os.fsdecode(path))
        return text if text.startswith(self.roots) else None

    def _log(self, event: str, path: str, **fields: object) -> None:
        line = json.dumps({"e": event, "p": path, **fields}) + "\n"
        _real["write"](self._journal, line.encode())

    def _rule_for(self, op: str, path: str | None) -> Rule | None:
        if path is None:
            return None
        try:
            mtime = os.stat(self.control / FAULTS_FILE).st_mtime_ns
        except FileNotFoundError:
            mtime = 0
        with self._lock:
            if mtime != self._rules_mtime:
                self._rules_mtime = mtime
                self._rules = self._read_rules() if mtime else []
            for rule in self._rules:
                if rule.op == op and rule.times != 0 and rule.path in path:
                    if rule.times > 0:
                        rule.times -= 1
                    return rule
        return None

    def _injected(self, rule: Rule, path: str) -> None:
        with self._lock:
            self._log("fault", path, rule=rule.to_json())

    def _read_rules(self) -> list[Rule]:
        try:
            return [Rule.parse(r) for r in json.loads((self.control / FAULTS_FILE).read_text())]
        except (OSError, ValueError, KeyError, TypeError):
            return []  # a half-written or bad file injects nothing

    # -- the wrapped calls ---------------------------------------------------
    def open(self, path, flags, mode=0o777, *, dir_fd=None):
        fd = _real["open"](path, flags, mode, dir_fd=dir_fd)
        tracked = self.tracked(path) if dir_fd is None else None
        if tracked is not None:
            with self._lock:
                self._paths[fd] = tracked
                if flags & os.O_TRUNC and not os.path.isdir(tracked):
                    self._log("trunc", tracked, size=0)
        return fd

    def dup(self, fd):
        new = _real["dup"](fd)
        with self._lock:
            if fd in self._paths:
                self._paths[new] = self._paths[fd]
        return new

    def close(self, fd):
        with self._lock:
            self._paths.pop(fd, None)
        return _real["close"](fd)

    def _before_write(self, fd: int, size: int) -> tuple[str | None, Rule | None]:
        path = self._paths.get(fd)
        rule = self._rule_for("write", path)
        if rule is not None:
            self._injected(rule, path)
        if rule is not None and rule.mode == "error":
            raise OSError(ERRNOS[rule.errno_name], os.strerror(ERRNOS[rule.errno_name]), path)
        return path, rule

    def _after_write(self, path: str | None) -> None:
        if path is not None and path not in self._dirty:
            with self._lock:
                if path not in self._dirty:
                    self._dirty.add(path)
                    self._log("dirty", path)

    def _partial(self, rule: Rule, fd: int, data: bytes, position: int | None) -> int:
        """A "short" or "torn" write: half of `data` reaches the file."""
        half = data[:max(1, len(data) // 2)]
        written = _real["write"](fd, half) if position is None else _real["pwrite"](fd, half, position)
        self._after_write(self._paths.get(fd))
        if rule.mode == "torn":
            os.kill(os.getpid(), signal.SIGKILL)
        return written

    def write(self, fd, data):
        path, rule = self._before_write(fd, len(data))
        if rule is not None:
            return self._partial(rule, fd, bytes(data), None)
        n = _real["write"](fd, data)
        self._after_write(path)
        return n

    def pwrite(self, fd, data, position):
        path, rule = self._before_write(fd, len(data))
        if rule is not None:
            return self._partial(rule, fd, bytes(data), position)
        n = _real["pwrite"](fd, data, position)
        self._after_write(path)
        return n

    def pwritev(self, fd, buffers, position, *args):
        path, rule = self._before_write(fd, 0)
        if rule is not None:
            return self._partial(rule, fd, b"".join(bytes(b) for b in buffers), position)
        n = _real["pwritev"](fd, buffers, position, *args)
        self._after_write(path)
        return n

    def _sync(self, name: str, fd: int) -> None:
        path = self._paths.get(fd)
        rule = self._rule_for("fsync", path)
        if rule is not None:
            self._injected(rule, path)
        if rule is not None and rule.mode == "hang":
            threading.Event().wait()  # a disk that never answers: only a kill ends this thread
        if rule is not None:
            with self._lock:
                self._poisoned.add(path)
            raise OSError(ERRNOS[rule.errno_name], os.strerror(ERRNOS[rule.errno_name]), path)
        _real[name](fd)
        if path is None or os.path.isdir(path):
            return
        with self._lock:
            if path in self._poisoned:
                return  # the lie: success, but the lost pages stay lost
            self._dirty.discard(path)
            self._log("sync", path, size=os.fstat(fd).st_size)

    def fsync(self, fd):
        self._sync("fsync", fd if isinstance(fd, int) else fd.fileno())

    def fdatasync(self, fd):
        self._sync("fdatasync", fd if isinstance(fd, int) else fd.fileno())

    def ftruncate(self, fd, length):
        _real["ftruncate"](fd, length)
        path = self._paths.get(fd)
        if path is not None:
            with self._lock:
                self._log("trunc", path, size=length)

    def _move(self, name: str, src, dst, **kw):
        _real[name](src, dst, **kw)
        old, new = self.tracked(src), self.tracked(dst)
        if old is not None or new is not None:
            with self._lock:
                self._log("move", old or "", to=new or "")
                if old in self._dirty:
                    self._dirty.discard(old)
                    if new is not None:
                        self._dirty.add(new)

    def replace(self, src, dst, **kw):
        self._move("replace", src, dst, **kw)

    def rename(self, src, dst, **kw):
        self._move("rename", src, dst, **kw)

    def unlink(self, path, **kw):
        _real["unlink"](path, **kw)
        tracked = self.tracked(path)
        if tracked is not None:
            with self._lock:
                self._dirty.discard(tracked)
                self._log("unlink", tracked)


_layer: FaultLayer | None = None


def install(control: Path, roots: Iterable[Path]) -> FaultLayer:
    """Wrap `os` for this process (once). For the testbed and this module's tests only."""
    global _layer
    if _layer is None:
        _layer = FaultLayer(control, roots)
        for name in _real:
            setattr(os, name, getattr(_layer, name))
    return _layer


def uninstall() -> None:
    global _layer
    if _layer is not None:
        for name, fn in _real.items():
            setattr(os, name, fn)
        _real["close"](_layer._journal)
        _layer = None


def install_from_env(roots: Iterable[str | Path]) -> FaultLayer | None:
    control = os.environ.get(ENV)
    if not control:
        return None
    return install(Path(control), [Path(r) for r in roots])


# -- power loss (the testbed's side, with the node dead) ------------------------

def durable_sizes(control: Path) -> dict[str, int | None]:
    """Replay a node's journals: path -> the size that survives a power loss
    (None: written, never fsynced, so it goes)."""
    durable: dict[str, int] = {}
    dirty: set[str] = set()
    for journal in sorted(Path(control).glob(JOURNAL_GLOB)):
        for line in journal.read_text().splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue  # the last line of a killed process may be cut
            e, p = ev["e"], ev["p"]
            if e == "sync":
                durable[p] = ev["size"]
                dirty.discard(p)
            elif e == "dirty":
                dirty.add(p)
            elif e == "trunc":
                if p in durable:
                    durable[p] = min(durable[p], ev["size"])
                else:
                    dirty.add(p)
            elif e == "move":
                to = ev["to"]
                if p in durable and to:
                    durable[to] = durable.pop(p)
                    dirty.discard(to)
                elif p in durable:
                    durable.pop(p)
                if p in dirty:
                    dirty.discard(p)
                    if to:
                        dirty.add(to)
            elif e == "unlink":
                durable.pop(p, None)
                dirty.discard(p)
    result: dict[str, int | None] = dict(durable)
    for p in dirty - durable.keys():
        result[p] = None
    return result


def injected(control: Path) -> int:
    """How many faults the node's layer injected (since its last power loss)."""
    return sum(line.count('"e": "fault"') for line in
               (j.read_text() for j in Path(control).glob(JOURNAL_GLOB)))


def power_loss(control: Path) -> list[tuple[str, int, int | None]]:
    """Cut every file the node's journals know back to its durable size; remove
    those never fsynced. Returns (path, size before, size after or None).
    The journals go with it: the next start journals the cut files as durable."""
    cuts = []
    for path, size in sorted(durable_sizes(control).items()):
        try:
            before = os.stat(path).st_size
        except FileNotFoundError:
            continue
        if size is None:
            os.remove(path)
            cuts.append((path, before, None))
        elif before > size:
            os.truncate(path, size)
            cuts.append((path, before, size))
    for journal in Path(control).glob(JOURNAL_GLOB):
        journal.unlink()
    return cuts


def flip_byte(path: Path, position: int) -> int:
    """Invert every bit of one byte of `path` (position taken modulo its size); the new value."""
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            raise ValueError(f"{path} is empty")
        f.seek(position % size)
        value = f.read(1)[0] ^ 0xFF
        f.seek(position % size)
        f.write(bytes([value]))
    return value
