"""Hostile bytes in a chaos run's history (a producer's values, partition
keys, consumer names, error texts, a fault's details) never become markup
on its what-went-wrong page (chaos/what_went_wrong.py): every one is
escaped, in text and in attributes, and the page has no script and links
only to the run's own files. Pure: no cluster."""
from __future__ import annotations

import json
from html.parser import HTMLParser

from chaos import what_went_wrong as www
from chaos.queue_checks import analyze, summarize
from tests.chaos.test_queue_checks import final, poll, record, send

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
QUOTED = "'><svg onload=alert(2)>"
HOSTILE = (SCRIPT, BREAKOUT, QUOTED)
# every element the page itself draws
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "ul", "li", "table", "tr",
             "th", "td", "details", "summary", "a", "span", "pre", "br", "svg", "line", "text", "rect", "path",
             "circle"}
PAGE_ATTRS = {"charset", "class", "href", "style", "xmlns", "width", "height", "x", "y", "x1", "y1", "x2", "y2",
              "cx", "cy", "r", "d", "fill", "stroke", "opacity", "stroke-dasharray", "text-anchor"}


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str]]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def hostile_run(h):
    for i, value in enumerate(HOSTILE):
        send(h, 1, value, value, offset=0)             # lost, in a partition named like it
        send(h, 2, "t-0", value + "-dup", offset=i)    # read at two offsets
    send(h, 3, BREAKOUT, SCRIPT + "?", "info")         # unknown outcome
    h.fault(SCRIPT, "start", nodes=[BREAKOUT], why=QUOTED)
    h.fault(SCRIPT, "step", step=BREAKOUT)
    h.fault(SCRIPT, "stop")
    h.fault(BREAKOUT, "start", nodes=[1])              # no stop line
    poll(h, 4, SCRIPT, {"t-0": [[i, v + "-dup"] for i, v in enumerate(HOSTILE)]})
    poll(h, 4, SCRIPT, {"t-0": [[i + 10, v + "-dup"] for i, v in enumerate(HOSTILE)]})
    call = h.invoke(5, "poll", None, {"consumer": QUOTED, "mode": "assign"})
    h.complete(call, "fail", error=f"CorruptRecordError: {BREAKOUT}")
    final(h, "t-0", [[i, v + "-dup"] for i, v in enumerate(HOSTILE)] + [[i + 10, v + "-dup"]
                                                                       for i, v in enumerate(HOSTILE)])


def test_hostile_history_values_are_escaped_everywhere_on_the_page(tmp_path) -> None:
    history = record(tmp_path, hostile_run)
    report = analyze(history)
    (tmp_path / "anomalies.json").write_text(json.dumps(report.anomalies))
    summary = summarize(report, faults=2, verdicts={"log": "illegal", "offsets": None, "metadata": None})
    summary.update(notes=[BREAKOUT], corrupt_reads=1, scenario=SCRIPT)
    (tmp_path / "log-failure.html").write_text("the checker's page")
    (tmp_path / "log-verdict.json").write_text(json.dumps({"result": "illegal", "partitions": [
        {"key": BREAKOUT, "result": "illegal", "operations": 3}], "counterexample": {"reason": SCRIPT}}))
    page = www.attach(tmp_path, summary)
    text = page.read_text()
    assert report.counts()["lost"] == 3 and report.counts()["duplicate"] == 3
    for value in HOSTILE:
        assert value not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text  # shown, as text
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in text
    assert "CorruptRecordError" in text  # the corrupt read is marked, its error escaped
    parser = Tags()
    parser.feed(text)
    tags = {tag for tag, _ in parser.tags}
    attrs = {name for _, pairs in parser.tags for name, _ in pairs}
    assert tags <= PAGE_TAGS, tags - PAGE_TAGS
    assert attrs <= PAGE_ATTRS, attrs - PAGE_ATTRS
    hrefs = {value for tag, pairs in parser.tags for name, value in pairs if name == "href"}
    assert hrefs == {"log-failure.html", "log-verdict.json", "anomalies.json", "summary.json", "history.jsonl"}
