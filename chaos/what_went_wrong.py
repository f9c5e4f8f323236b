"""The "what went wrong" page of a chaos run that was not clean (issue 22).

`build()` turns a run's results folder (history.jsonl, anomalies.json, the
checker's <model>-verdict.json and <model>-failure.html, the summary) into
one self-contained HTML page - inline SVG and CSS, no script, nothing
fetched - and `attach()` writes it as what-went-wrong.html beside them when
the run is not clean: an anomaly (unknown sends absent from the final read
are allowed, so they alone are not one), a checker verdict other than ok,
a corrupt read, or an invalid run. The summary then says
`"what_went_wrong": "what-went-wrong.html"`; a clean run has neither.

The page, over one time axis (seconds since the history's recorder started):
- the summary's key figures and why the page exists;
- one band per fault, from the nemesis's lines: its kind, targets and
  start-stop; the lines a fault writes before its start line (a roll's
  steps, a scripted sequence such as last-replica-standing) open its band,
  and every other line of it (step, effect, proxied) is a tick on it. A
  fault with no stop line (the unclean-election scenario's kills and
  restarts) is a one-off tick;
- one lane per partition, with each anomalous operation marked at its time:
  a lost or misplaced acknowledged write at its acknowledgement, a value
  read twice or an offset read with two values where the second place or
  value was first read, a value nobody sent where it was first read, a
  consumer's stream going backwards or skipping where it did, a corrupt
  read where it failed; each mark's tooltip gives the value, offsets, the
  producer's and the reader's process. Sends (or transactions) of unknown
  outcome are counted per interval of their invoke time, as grey bars;
- the anomalies per partition in tables, the faults in a table with their
  steps, and links to the checker's pages and the run's files.

Every value taken from the history or the anomalies is producer-controlled
bytes: each is html-escaped, in text and in attributes alike. Big runs stay
bounded: at most MAX_MARKS_PER_LANE marks per lane (evenly drawn in time),
MAX_TABLE_ROWS rows per partition's table, MAX_BANDS fault bands, MAX_LANES
lanes - each cut says how many were left out. The history is read once,
streaming, keeping only what the anomalies point at.
"""
from __future__ import annotations

import html
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from .history import FAIL, INFO, NEMESIS, OK, paired, read_history
from .matrix import MODELS, VERDICT_KEYS
from .minority_damage import CORRUPT  # what a read that met a batch whose CRC fails raised

PAGE = "what-went-wrong.html"
SUMMARY_KEY = "what_went_wrong"
ALLOWED = "lost-unacked-ok"  # unknown sends absent from the final read: information, not an anomaly
CORRUPT_KIND = "corrupt-read"
MAX_MARKS_PER_LANE = 250
MAX_TABLE_ROWS = 100
MAX_BANDS = 150
MAX_LANES = 40
MAX_STEPS_SHOWN = 40
READS_KEPT = 20  # places kept per value, values per offset (each with its first read)
BINS = 60  # intervals of the unknown-outcome histogram
TEXT_CAP = 600  # characters of one detail shown
NO_PARTITION = "(no partition recorded)"

# Where a kind of anomaly is marked: at the acknowledgement of the write it names ...
AT_ACK = ("lost", "wrong-offset", "zombie-commit")
# ... where a second place of its value, or a second value of its offset, was first read ...
AT_SECOND_PLACE = ("duplicate",)
AT_SECOND_VALUE = ("inconsistent-offset",)
# ... where a consumer's stream did it.
AT_STREAM = ("non-monotonic", "skip")
COLOURS = {"lost": "#d62728", "wrong-offset": "#9467bd", "duplicate": "#ff7f0e", "inconsistent-offset": "#8c564b",
           "unexpected": "#e377c2", "non-monotonic": "#17becf", "skip": "#bcbd22", CORRUPT_KIND: "#000000",
           "aborted-read": "#1f77b4", "torn": "#2ca02c", "intermediate-read": "#7f7f7f"}
OTHER_COLOUR = "#393b79"


def reasons(summary: dict[str, Any]) -> list[str]:
    """Why a run is not clean; empty for a clean run."""
    why = []
    counts = summary.get("anomalies") or {}
    found = {k: n for k, n in counts.items() if k != ALLOWED and isinstance(n, int) and n > 0}
    if found:
        why.append("anomalies: " + ", ".join(f"{k} {n}" for k, n in found.items()))
    for model, key in VERDICT_KEYS.items():
        if summary.get(key) not in ("ok", None):
            why.append(f"checker, {model} model: {summary.get(key)}")
    if summary.get("corrupt_reads"):
        why.append(f"corrupt reads: {summary['corrupt_reads']}")
    if summary.get("valid") is False:
        why.append("the run is invalid (valid: false)")
    return why


def attach(results: Path, summary: dict[str, Any], history_file: Optional[Path] = None) -> Optional[Path]:
    """Write the page into `results` when the run is not clean and name it in
    `summary` (the caller writes summary.json); a clean run gets neither, and
    a page left from an earlier check of the folder is removed. A page that
    cannot be built is a note in the summary, never an exception."""
    results = Path(results)
    page = results / PAGE
    page.unlink(missing_ok=True)
    if not reasons(summary):
        summary.pop(SUMMARY_KEY, None)
        return None
    try:
        text = build(results, summary, history_file)
    except Exception as exc:  # noqa: BLE001 - a page that cannot be drawn must not cost the run its summary
        summary.pop(SUMMARY_KEY, None)
        summary.setdefault("notes", []).append(f"{PAGE} not written: {type(exc).__name__}: {exc}")
        return None
    page.write_text(text, encoding="utf-8")
    summary[SUMMARY_KEY] = PAGE
    return page


# -- what the files say ---------------------------------------------------------------------------

@dataclass
class Band:
    """One fault: from its first line to its stop line (None: it had none)."""
    kind: str
    start: int
    stop: Optional[int] = None
    details: dict[str, Any] = field(default_factory=dict)
    steps: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)  # (time, phase, details)
    skipped: bool = False


class _Faults:
    def __init__(self) -> None:
        self.bands: list[Band] = []
        self._open: dict[str, Band] = {}
        self._pending: dict[str, list[tuple[int, str, dict[str, Any]]]] = defaultdict(list)

    def add(self, line: dict[str, Any]) -> None:
        kind, at = str(line.get("f")), int(line.get("time") or 0)
        value = line.get("value") if isinstance(line.get("value"), dict) else {}
        phase = str(value.get("phase"))
        details = {k: v for k, v in value.items() if k != "phase"}
        if phase == "start":
            steps = self._pending.pop(kind, [])
            band = Band(kind, min([at] + [s[0] for s in steps]), details=details, steps=steps)
            self.bands.append(band)
            self._open[kind] = band
        elif phase == "stop":
            band = self._open.pop(kind, None)
            if band is not None:
                band.stop = at
            else:
                self.bands.append(Band(kind, at, at, {"note": "a stop line with no start"}))
        elif kind in self._open:
            self._open[kind].steps.append((at, phase, details))
        elif phase == "skipped":
            self.bands.append(Band(kind, at, at, details, skipped=True))
        else:
            self._pending[kind].append((at, phase, details))

    def finish(self) -> list[Band]:
        for kind, steps in self._pending.items():  # steps of a sequence that never wrote its start line
            self.bands.append(Band(kind, steps[0][0], steps[-1][0],
                                   {"note": "steps with no start line (the sequence did not finish?)"}, steps))
        return sorted(self.bands, key=lambda b: b.start)


@dataclass
class _Interest:
    """What the anomalies point at: only these are kept from the history."""
    values: set[str] = field(default_factory=set)
    places: set[tuple[str, int]] = field(default_factory=set)
    pairs: set[tuple[str, str, int, int]] = field(default_factory=set)  # consumer, partition, from, to
    txns: set[str] = field(default_factory=set)
    absent: set[str] = field(default_factory=set)  # unknown sends absent from the final read


def _interest(anomalies: dict[str, Any]) -> _Interest:
    wanted = _Interest()
    for kind, listed in anomalies.items():
        for a in listed if isinstance(listed, list) else ():
            if not isinstance(a, dict):
                continue
            if kind == ALLOWED:
                wanted.absent.add(str(a.get("value")))
                continue
            if "value" in a:
                wanted.values.add(str(a["value"]))
            if isinstance(a.get("values"), list):
                wanted.values.update(str(v) for v in a["values"])
            partition = a.get("partition")
            for key in ("offset", "acked_offset"):
                if partition is not None and isinstance(a.get(key), int):
                    wanted.places.add((str(partition), a[key]))
            if kind in AT_STREAM and isinstance(a.get("from"), int) and isinstance(a.get("to"), int):
                wanted.pairs.add((str(a.get("consumer")), str(partition), a["from"], a["to"]))
            for key in ("txn", "txns"):
                ids = a.get(key)
                wanted.txns.update(str(t) for t in (ids if isinstance(ids, list) else [ids] if ids else ()))
    return wanted


@dataclass
class _Index:
    """What the history says about the anomalies' values, offsets and transactions."""
    start: Optional[int] = None  # the first line's time (a run's cluster starts before its workload)
    end: int = 0
    sent: dict[str, dict[str, Any]] = field(default_factory=dict)  # value -> its send (or transaction)
    # value -> (partition, offset) -> its first read there (time, reader); and the converse
    reads: dict[str, dict[tuple[str, Any], tuple[int, str]]] = field(default_factory=lambda: defaultdict(dict))
    at_place: dict[tuple[str, Any], dict[str, tuple[int, str]]] = field(default_factory=lambda: defaultdict(dict))
    pair_at: dict[tuple[str, str, int, int], tuple[int, Any]] = field(default_factory=dict)
    txns: dict[str, dict[str, Any]] = field(default_factory=dict)
    unknown: dict[str, list[tuple[int, bool]]] = field(default_factory=lambda: defaultdict(list))  # invoke, absent
    corrupt: list[dict[str, Any]] = field(default_factory=list)
    bands: list[Band] = field(default_factory=list)
    operations: int = 0


def _index(lines: Iterable[dict[str, Any]], wanted: _Interest) -> _Index:
    ix = _Index()
    faults = _Faults()

    def tap() -> Iterator[dict[str, Any]]:
        for line in lines:
            at = int(line.get("time") or 0)
            ix.end = max(ix.end, at)
            ix.start = at if ix.start is None else min(ix.start, at)
            if line.get("process") == NEMESIS:
                faults.add(line)
            yield line

    pending: dict[Any, dict[str, Any]] = {}  # unknown-outcome candidates: process -> invoke
    last: dict[tuple[str, str], int] = {}  # a consumer's last offset read of a partition
    for call, done in paired(tap()):
        f = call.get("f")
        if done is None:
            ix.operations += 1
            if f in ("send", "txn"):
                pending[call["process"]] = call
            continue
        pending.pop(call["process"], None)
        kind = done.get("type")
        if f == "send":
            _sent(ix, wanted, call, done)
        elif f == "txn":
            _txn(ix, wanted, call, done)
        elif f in ("poll", "final-read") and kind == OK:
            reader = "final read" if f == "final-read" else str((call.get("value") or {}).get("consumer"))
            _reads(ix, wanted, call, done, reader, last)
        elif f == "assign" and kind == OK:
            consumer = str((call.get("value") or {}).get("consumer"))
            for partition in done.get("value") or ():
                last.pop((consumer, str(partition)), None)
        if f in ("poll", "final-read") and kind in (FAIL, INFO) and CORRUPT in str(done.get("error", "")):
            ix.corrupt.append({"time": done["time"], "process": call["process"], "error": str(done.get("error")),
                               "partition": str(call["key"]) if f == "final-read" else NO_PARTITION,
                               "reader": str((call.get("value") or {}).get("consumer") or "final read")})
    for call in pending.values():  # still open at the end: unknown outcome
        _unknown(ix, wanted, call)
    ix.bands = faults.finish()
    return ix


def _partitions_of(call: dict[str, Any]) -> list[str]:
    if call.get("f") == "txn":
        return sorted(str(p) for p in ((call.get("value") or {}).get("writes") or {}))
    return [str(call.get("key"))]


def _unknown(ix: _Index, wanted: _Interest, call: dict[str, Any]) -> None:
    values = [str(call.get("value"))] if call.get("f") == "send" else []
    absent = bool(values) and values[0] in wanted.absent
    for partition in _partitions_of(call):
        ix.unknown[partition].append((int(call["time"]), absent))


def _sent(ix: _Index, wanted: _Interest, call: dict[str, Any], done: dict[str, Any]) -> None:
    if done.get("type") == INFO:
        _unknown(ix, wanted, call)
    value = str(call.get("value"))
    if value in wanted.values:
        ix.sent[value] = {"partition": str(call.get("key")), "producer process": call["process"],
                          "invoked_s": _s(call["time"]), "outcome": done.get("type"), "completed": done["time"],
                          "acked offset": done.get("value") if done.get("type") == OK else None,
                          "error": done.get("error")}


def _txn(ix: _Index, wanted: _Interest, call: dict[str, Any], done: dict[str, Any]) -> None:
    if done.get("type") == INFO:
        _unknown(ix, wanted, call)
    v = call.get("value") or {}
    facts = {"txn": str(v.get("id")), "transactional id": call.get("key"), "producer process": call["process"],
             "invoked_s": _s(call["time"]), "outcome": done.get("value") if done.get("type") == OK else done.get("type"),
             "completed": done["time"]}
    if facts["txn"] in wanted.txns:
        ix.txns[facts["txn"]] = {**facts, "partitions": _partitions_of(call)}
    for partition, values in (v.get("writes") or {}).items():
        for value in values or ():
            if str(value) in wanted.values:
                ix.sent[str(value)] = {**facts, "partition": str(partition)}


def _reads(ix: _Index, wanted: _Interest, call: dict[str, Any], done: dict[str, Any], reader: str,
           last: dict[tuple[str, str], int]) -> None:
    groups = [(call.get("key"), done.get("value"))] if call["f"] == "final-read" else (done.get("value") or {}).items()
    at = int(done["time"])
    for partition, records in groups:
        partition = str(partition)
        for record in records or ():
            if not isinstance(record, (list, tuple)) or len(record) < 2:
                continue
            offset, value = record[0], str(record[1])
            who = f"{reader} (process {call['process']})"
            if value in wanted.values and len(ix.reads[value]) < READS_KEPT:
                ix.reads[value].setdefault((partition, offset), (at, who))
            if (partition, offset) in wanted.places and len(ix.at_place[(partition, offset)]) < READS_KEPT:
                ix.at_place[(partition, offset)].setdefault(value, (at, who))
            if call["f"] == "poll":
                before = last.get((reader, partition))
                pair = (reader, partition, before, offset)
                if before is not None and pair in wanted.pairs and pair not in ix.pair_at:
                    ix.pair_at[pair] = (at, call["process"])
                last[(reader, partition)] = offset


# -- where each anomaly goes ----------------------------------------------------------------------

@dataclass
class Mark:
    kind: str
    partition: str
    time: Optional[int]  # ns; None: the history does not place it
    facts: dict[str, Any]


def _marks(anomalies: dict[str, Any], ix: _Index) -> list[Mark]:
    marks = []
    for kind, listed in anomalies.items():
        if kind == ALLOWED or not isinstance(listed, list):
            continue
        for a in listed:
            marks += _place(kind, a if isinstance(a, dict) else {"detail": a}, ix)
    for c in ix.corrupt:
        marks.append(Mark(CORRUPT_KIND, c["partition"], c["time"],
                          {"error": c["error"], "reader": c["reader"], "process": c["process"]}))
    return marks


def _place(kind: str, a: dict[str, Any], ix: _Index) -> list[Mark]:
    value = str(a["value"]) if "value" in a else None
    sent = ix.sent.get(value) if value is not None else None
    facts = {**a}
    if sent is not None:
        facts.update({k: v for k, v in sent.items() if k != "completed"})
        facts["completed_s"] = _s(sent["completed"])
    partition = str(a["partition"]) if a.get("partition") is not None else (sent or {}).get("partition")
    if kind in AT_SECOND_PLACE and value is not None:
        places = sorted((first, place) for place, first in ix.reads.get(value, {}).items())
        if len(places) > 1:  # where it was first read a second time, somewhere else
            (at, reader), (partition, offset) = places[1]
            facts.update(first_read=[*places[0][1], places[0][0][1]], second_read=[partition, offset, reader])
            return [Mark(kind, partition, at, facts)]
        return [Mark(kind, partition or NO_PARTITION, None, facts)]
    if kind in AT_SECOND_VALUE and partition is not None:
        seen = sorted((first, v) for v, first in ix.at_place.get((partition, a.get("offset")), {}).items())
        if len(seen) > 1:  # where the offset was first read with another value
            facts.update(first=[seen[0][1], seen[0][0][1]], second=[seen[1][1], seen[1][0][1]])
            return [Mark(kind, partition, seen[1][0][0], facts)]
        return [Mark(kind, partition, None, facts)]
    if kind in AT_STREAM:
        found = ix.pair_at.get((str(a.get("consumer")), str(partition), a.get("from"), a.get("to")))
        if found:
            facts["process"] = found[1]
        return [Mark(kind, partition or NO_PARTITION, found[0] if found else None, facts)]
    txn = ix.txns.get(str(a.get("txn"))) if a.get("txn") is not None else None
    if kind in AT_ACK and sent is not None:
        return [Mark(kind, partition or NO_PARTITION, sent["completed"], facts)]
    if txn is not None and partition is None:  # a transaction's anomaly: marked in each partition it wrote
        facts.update({k: v for k, v in txn.items() if k not in ("completed", "partitions")})
        return [Mark(kind, p, txn["completed"], facts) for p in txn["partitions"] or [NO_PARTITION]]
    reads = sorted((first, place) for place, first in (ix.reads.get(value, {}) if value is not None else {}).items()
                   if partition is None or place[0] == partition)
    if not reads and partition is not None and "offset" in a:  # an offset's anomaly: its first read
        reads = sorted((first, (partition, a["offset"])) for first in ix.at_place.get((partition, a["offset"]),
                                                                                        {}).values())
    if reads:
        (at, reader), place = reads[0]
        facts["first_read"] = [*place, reader]
        return [Mark(kind, place[0], at, facts)]
    at = sent["completed"] if sent is not None else txn["completed"] if txn is not None else None
    return [Mark(kind, partition or NO_PARTITION, at, facts)]


# -- the page -------------------------------------------------------------------------------------

def build(results: Path, summary: Optional[dict[str, Any]] = None, history_file: Optional[Path] = None) -> str:
    """The page of a results folder (pure: reads its files, writes nothing).
    `summary`: the run's (default: its summary.json)."""
    results = Path(results)
    on_disk = _json(results / "summary.json") or {}
    summary = {**{k: on_disk[k] for k in ("scenario", "seed", "time_limit_s", "client", "unclean") if k in on_disk},
               **(summary if summary is not None else on_disk)}
    anomalies = _json(results / "anomalies.json")
    history = Path(history_file or results / "history.jsonl")
    ix = _index(read_history(history) if history.is_file() else (), _interest(anomalies or {}))
    verdicts = {m: _json(results / f"{m}-verdict.json") for m in MODELS}
    pages = [f"{m}-failure.html" for m in MODELS if (results / f"{m}-failure.html").is_file()]
    return render(summary, anomalies, ix, verdicts, pages, history.name if history.is_file() else None)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _s(ns: Optional[int]) -> Optional[float]:
    return None if ns is None else round(ns / 1e9, 3)


def esc(value: Any, cap: int = TEXT_CAP) -> str:
    """Any value as escaped text (strings as they are, the rest as JSON), cut to `cap` characters."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    if len(text) > cap:
        text = text[:cap] + f"... ({len(text) - cap} more characters)"
    return html.escape(text, quote=True)


def render(summary: dict[str, Any], anomalies: Optional[dict[str, Any]], ix: _Index,
           verdicts: dict[str, Any], pages: list[str], history_name: Optional[str]) -> str:
    marks = _marks(anomalies or {}, ix)
    out = [_HEAD, "<h1>What went wrong</h1>", _figures(summary, ix)]
    if anomalies is None:
        out.append("<p class=note>No readable anomalies.json beside this page: the anomalies are the summary's "
                   "counts only.</p>")
    out += [_links(pages, verdicts, history_name), _timeline(ix, marks), _tables(marks),
            _fault_table(ix.bands), _verdict_section(verdicts), "</body></html>\n"]
    return "\n".join(out)


_HEAD = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>What went wrong</title>
<style>
body{font-family:sans-serif;margin:1em 2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;text-align:left;vertical-align:top}
td.detail{font-family:monospace;max-width:70em;word-break:break-all}
.note{color:#666;font-size:13px}
.why{color:#b00}
svg text{font-size:11px;font-family:sans-serif}
</style></head><body>"""


def _figures(summary: dict[str, Any], ix: _Index) -> str:
    rows = [("scenario", summary.get("scenario")), ("seed", summary.get("seed")),
            ("time limit (s)", summary.get("time_limit_s")), ("client", summary.get("client")),
            ("valid", summary.get("valid")),
            *((f"checker: {m}", summary.get(k)) for m, k in VERDICT_KEYS.items()),
            ("sends ok / fail / info", "/".join(str(summary["sends"].get(k, "?")) for k in (OK, FAIL, INFO))
             if isinstance(summary.get("sends"), dict) else None),
            ("transactions", summary.get("transactions")),
            ("unknown sends (info, open, written, absent)", summary.get("indeterminate_sends")),
            ("records polled / finally read", f"{summary['polled_records']} / {summary.get('final_records')}"
             if "polled_records" in summary else None),
            ("faults", summary.get("faults")),
            ("anomalies", {k: n for k, n in (summary.get("anomalies") or {}).items() if n}),
            ("corrupt reads", summary.get("corrupt_reads")),
            ("longest produce unavailability (s)", summary.get("produce_unavailability_s")),
            ("history", f"{ix.operations} operations, lines from {_s(ix.start)} to {_s(ix.end)} s")]
    out = ["<ul class=why>" + "".join(f"<li>{esc(w)}</li>" for w in reasons(summary)) + "</ul>", "<table>"]
    out += [f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows if v not in (None, {})]
    out.append("</table>")
    notes = summary.get("notes") or []
    if notes:
        out.append("<details><summary>notes (" + str(len(notes)) + ")</summary><ul>"
                   + "".join(f"<li>{esc(n)}</li>" for n in notes[:MAX_TABLE_ROWS]) + "</ul></details>")
    return "\n".join(out)


def _links(pages: list[str], verdicts: dict[str, Any], history_name: Optional[str]) -> str:
    links = [(p, f"the checker's page: {p.split('-')[0]} model") for p in pages]
    links += [(f"{m}-verdict.json", f"{m} verdict") for m, v in verdicts.items() if v is not None]
    links += [("anomalies.json", "anomalies.json"), ("summary.json", "summary.json")]
    if history_name:
        links.append((history_name, history_name))
    return "<p>" + " | ".join(f'<a href="{esc(href)}">{esc(text)}</a>' for href, text in links) + "</p>"


class _Axis:
    """From the history's first line to its last (times in ns since the recorder started)."""
    LEFT, WIDTH = 190, 1150

    def __init__(self, start_ns: int, end_ns: int) -> None:
        self.start = start_ns
        self.span = max(end_ns - start_ns, 1)
        self.plot = self.WIDTH - self.LEFT - 20

    def x(self, ns: Optional[int]) -> float:
        return round(self.LEFT + min(max((ns or 0) - self.start, 0), self.span) / self.span * self.plot, 1)

    def ticks(self) -> list[float]:
        """Round seconds inside the axis."""
        step = next((s for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600)
                     if self.span / 1e9 / s <= 12), 7200)
        first = -(-self.start // int(step * 1e9))
        return [round(i * step, 3) for i in range(first, int((self.start + self.span) / 1e9 / step) + 1)]


def _timeline(ix: _Index, marks: list[Mark]) -> str:
    axis = _Axis(ix.start or 0, ix.end)
    by_lane: dict[str, list[Mark]] = defaultdict(list)
    for m in marks:
        by_lane[m.partition].append(m)
    for partition in ix.unknown:
        by_lane.setdefault(partition, [])
    lanes = sorted(by_lane, key=lambda p: (p == NO_PARTITION, p))
    notes = []
    if len(lanes) > MAX_LANES:
        notes.append(f"{len(lanes) - MAX_LANES} more partitions not drawn (their anomalies are in the tables)")
        lanes = lanes[:MAX_LANES]
    bands = ix.bands[:MAX_BANDS]
    if len(ix.bands) > MAX_BANDS:
        notes.append(f"{len(ix.bands) - MAX_BANDS} more faults not drawn (listed in the fault table)")
    band_h, lane_h, top = 14, 46, 24
    lanes_top = top + len(bands) * band_h + 16
    height = lanes_top + len(lanes) * lane_h + 10
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{axis.WIDTH}" height="{height}">']
    for t in axis.ticks():
        x = axis.x(round(t * 1e9))
        svg.append(f'<line x1="{x}" y1="{top - 6}" x2="{x}" y2="{height}" stroke="#eee"/>'
                   f'<text x="{x}" y="{top - 10}" text-anchor="middle">{t:g} s</text>')
    for i, band in enumerate(bands):  # each fault's window, shaded over every lane too
        y = top + i * band_h
        svg.append(_band(axis, band, y, band_h, lanes_top, height))
    for i, partition in enumerate(lanes):
        svg.append(_lane(axis, partition, by_lane[partition], ix.unknown.get(partition, []), lanes_top + i * lane_h,
                         lane_h, notes))
    svg.append("</svg>")
    legend = " ".join(f'<span style="color:{COLOURS.get(k, OTHER_COLOUR)}">&#9679;</span> {esc(k)}'
                      for k in sorted({m.kind for m in marks}))
    return ("<h2>Timeline</h2><p class=note>Seconds since the history's recorder started, from its first line to its last. "
            "Fault bands on top "
            "(a tick: a fault with no stop line, or one of its steps); one lane per partition below, each mark an "
            "anomalous operation (hover for its details); grey bars: operations of unknown outcome by invoke "
            "time.</p>" + f"<p>{legend}</p>" + "\n".join(svg)
            + "".join(f"<p class=note>{esc(n)}</p>" for n in notes))


def _band(axis: _Axis, band: Band, y: int, h: int, lanes_top: int, height: int) -> str:
    x0 = axis.x(band.start)
    colour = "#aaa" if band.skipped else "#f4a582"
    title = esc(f"{band.kind}{' (skipped)' if band.skipped else ''}: {_targets(band.details)} "
                f"{_s(band.start)} - {_s(band.stop) if band.stop is not None else 'no stop line'} s; "
                + json.dumps(band.details, default=str))
    label = esc(f"{band.kind} {_targets(band.details)}"[:32])
    parts = [f'<text x="4" y="{y + h - 3}">{label}</text>']
    if band.stop is not None:
        x1 = max(axis.x(band.stop), x0 + 2)
        parts.append(f'<rect x="{x0}" y="{lanes_top}" width="{round(x1 - x0, 1)}" height="{height - lanes_top}" '
                     f'fill="{colour}" opacity="0.15"/>')
        parts.append(f'<rect x="{x0}" y="{y + 1}" width="{round(x1 - x0, 1)}" height="{h - 2}" fill="{colour}">'
                     f'<title>{title}</title></rect>')
    else:
        parts.append(f'<path d="M{x0},{y + 1} l4,{h - 2} l-8,0 z" fill="{colour}"><title>{title}</title></path>')
        parts.append(f'<line x1="{x0}" y1="{lanes_top}" x2="{x0}" y2="{height}" stroke="{colour}" '
                     f'stroke-dasharray="3,3"/>')
    for at, phase, details in band.steps[:MAX_STEPS_SHOWN]:
        x = axis.x(at)
        step_title = esc(f"{band.kind} {phase} at {_s(at)} s: " + json.dumps(details, default=str))
        parts.append(f'<rect x="{x - 1}" y="{y}" width="2" height="{h}" fill="#333"><title>{step_title}</title>'
                     f'</rect>')
    return "".join(parts)


def _targets(details: dict[str, Any]) -> str:
    shown = [f"{k} {json.dumps(details[k], default=str)}" for k in ("nodes", "groups", "from", "to", "bridge",
                                                                     "follower", "leader", "partition")
             if k in details]
    return ", ".join(shown)


def _lane(axis: _Axis, partition: str, marks: list[Mark], unknown: list[tuple[int, bool]], y: int, h: int,
          notes: list[str]) -> str:
    parts = [f'<text x="4" y="{y + h // 2}">{esc(partition[:30])}</text>',
             f'<line x1="{axis.LEFT}" y1="{y + h - 1}" x2="{axis.LEFT + axis.plot}" y2="{y + h - 1}" stroke="#999"/>']
    parts += _histogram(axis, unknown, y + h - 1)
    placed = sorted((m for m in marks if m.time is not None), key=lambda m: m.time or 0)
    if len(placed) > MAX_MARKS_PER_LANE:
        notes.append(f"{partition}: {MAX_MARKS_PER_LANE} of {len(placed)} marks drawn (evenly in time; every one "
                     "is counted in the table)")
        placed = [placed[i * len(placed) // MAX_MARKS_PER_LANE] for i in range(MAX_MARKS_PER_LANE)]
    unplaced = sum(1 for m in marks if m.time is None)
    if unplaced:
        notes.append(f"{partition}: {unplaced} anomalies the history does not place in time (in the table)")
    slots = {k: i for i, k in enumerate(sorted({m.kind for m in marks}))}
    for m in placed:
        cy = y + 6 + (slots[m.kind] % 4) * 7
        parts.append(f'<circle cx="{axis.x(m.time)}" cy="{cy}" r="3.5" fill="{COLOURS.get(m.kind, OTHER_COLOUR)}">'
                     f'<title>{esc(_mark_text(m))}</title></circle>')
    return "".join(parts)


def _histogram(axis: _Axis, unknown: list[tuple[int, bool]], base: int) -> list[str]:
    if not unknown:
        return []
    width = axis.span / BINS
    counts = [[0, 0] for _ in range(BINS)]
    for at, absent in unknown:
        counts[min(max(int((at - axis.start) / width), 0), BINS - 1)][0] += 1
        counts[min(max(int((at - axis.start) / width), 0), BINS - 1)][1] += absent
    most = max(c for c, _ in counts)
    bars = []
    for i, (count, absent) in enumerate(counts):
        if count:
            begin, end = axis.start + int(i * width), axis.start + int((i + 1) * width)
            x0, x1 = axis.x(begin), axis.x(end)
            bar = max(1, round(12 * count / most))
            bars.append(f'<rect x="{x0}" y="{base - bar}" width="{round(x1 - x0, 1)}" height="{bar}" fill="#bbb">'
                        f'<title>{count} operations of unknown outcome invoked in {_s(begin)}-{_s(end)} s '
                        f'({absent} absent from the final read)</title></rect>')
    return bars


def _mark_text(m: Mark) -> str:
    at = f"{_s(m.time)} s" if m.time is not None else "time unknown"
    return f"{m.kind} at {at}: " + "; ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, default=str)}"
                                              for k, v in m.facts.items() if v is not None)


def _tables(marks: list[Mark]) -> str:
    by_lane: dict[str, list[Mark]] = defaultdict(list)
    for m in marks:
        by_lane[m.partition].append(m)
    if not by_lane:
        return "<h2>Anomalies</h2><p>No anomalous operation in anomalies.json.</p>"
    out = ["<h2>Anomalies per partition</h2>"]
    for partition in sorted(by_lane, key=lambda p: (p == NO_PARTITION, p))[:MAX_LANES]:
        rows = sorted(by_lane[partition], key=lambda m: (m.time is None, m.time or 0))
        counts = defaultdict(int)
        for m in rows:
            counts[m.kind] += 1
        out.append(f"<h3>{esc(partition)}</h3><p>" + esc(", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
                   + "</p><table><tr><th>time (s)</th><th>kind</th><th>details</th></tr>")
        out += [f"<tr><td>{esc(_s(m.time)) if m.time is not None else '?'}</td><td>{esc(m.kind)}</td>"
                f"<td class=detail>{esc(_mark_text(m).split(': ', 1)[1])}</td></tr>" for m in rows[:MAX_TABLE_ROWS]]
        out.append("</table>")
        if len(rows) > MAX_TABLE_ROWS:
            out.append(f"<p class=note>{len(rows) - MAX_TABLE_ROWS} more rows left out (anomalies.json has them)</p>")
    if len(by_lane) > MAX_LANES:
        out.append(f"<p class=note>{len(by_lane) - MAX_LANES} more partitions left out (anomalies.json has them)</p>")
    return "\n".join(out)


def _fault_table(bands: list[Band]) -> str:
    if not bands:
        return "<h2>Faults</h2><p>The history has no fault line.</p>"
    out = ["<h2>Faults</h2><table><tr><th>start (s)</th><th>stop (s)</th><th>kind</th><th>targets and details</th>"
           "<th>steps</th></tr>"]
    for band in bands[:MAX_BANDS * 2]:
        steps = "<br>".join(esc(f"{_s(at)} s {phase}: " + json.dumps(d, default=str))
                            for at, phase, d in band.steps[:MAX_STEPS_SHOWN])
        if len(band.steps) > MAX_STEPS_SHOWN:
            steps += f"<br>({len(band.steps) - MAX_STEPS_SHOWN} more)"
        stop = _s(band.stop) if band.stop is not None else "no stop line"
        out.append(f"<tr><td>{esc(_s(band.start))}</td><td>{esc(stop)}</td>"
                   f"<td>{esc(band.kind)}{' (skipped)' if band.skipped else ''}</td>"
                   f"<td class=detail>{esc(band.details)}</td><td class=detail>{steps}</td></tr>")
    out.append("</table>")
    if len(bands) > MAX_BANDS * 2:
        out.append(f"<p class=note>{len(bands) - MAX_BANDS * 2} more faults left out (history.jsonl has them)</p>")
    return "\n".join(out)


def _verdict_section(verdicts: dict[str, Any]) -> str:
    if not any(isinstance(v, dict) for v in verdicts.values()):
        return "<h2>Checker verdicts</h2><p>No verdict file beside this page (the checker did not run).</p>"
    out = ["<h2>Checker verdicts</h2><table><tr><th>model</th><th>key</th><th>result</th><th>operations</th>"
           "<th>ms</th></tr>"]
    for model, verdict in verdicts.items():
        if not isinstance(verdict, dict):
            continue
        parts = [p for p in verdict.get("partitions") or [] if isinstance(p, dict)]
        out.append(f"<tr><td>{esc(model)}</td><td>(all)</td><td>{esc(verdict.get('result'))}</td>"
                   f"<td>{esc(verdict.get('operations'))}</td><td></td></tr>")
        out += [f"<tr><td>{esc(model)}</td><td class=detail>{esc(p.get('key'))}</td><td>{esc(p.get('result'))}</td>"
                f"<td>{esc(p.get('operations'))}</td><td>{esc(p.get('elapsed_ms'))}</td></tr>"
                for p in parts[:MAX_TABLE_ROWS] if p.get("result") != "ok"]
    out.append("</table>")
    for model, verdict in verdicts.items():
        if isinstance(verdict, dict) and verdict.get("counterexample"):
            out.append(f"<h3>{esc(model)}: counterexample</h3><pre class=detail>"
                       f"{esc(json.dumps(verdict['counterexample'], indent=1), 4 * TEXT_CAP)}</pre>")
    return "\n".join(out)
