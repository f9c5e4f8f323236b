"""What the monitoring files in deploy/monitoring/ name: the Grafana
dashboard's queries, the Prometheus rules' expressions, and the metric
names in them (tests/kraftlog/test_metrics.py checks a running cluster
exposes each and a real Prometheus answers every query; test_monitoring_rules.py
runs promtool over the rules), and where promtool and prometheus are."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

import yaml

MONITORING = Path(__file__).resolve().parents[2] / "deploy" / "monitoring"
DASHBOARD = MONITORING / "grafana-dashboard.json"
RULES = MONITORING / "alert-rules.yaml"
RULES_TEST = MONITORING / "alert-rules.test.yaml"
SCRAPE_CONFIG = MONITORING / "prometheus.yaml"

# Where a test that needs them says so when it skips.
TOOLS_MISSING = "is not installed (make prometheus-tools takes it from Debian's prometheus package)"


def find_tool(name: str) -> Optional[str]:
    """promtool or prometheus: on the PATH, or beside the venv's python,
    where `make prometheus-tools` unpacks them."""
    beside_python = Path(sys.executable).with_name(name)
    return shutil.which(name) or (str(beside_python) if beside_python.exists() else None)


# Series Prometheus makes itself for every target, not scraped from a node.
PROMETHEUS_OWN = frozenset({"up"})

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"' r"|'(?:[^'\\]|\\.)*'" r"|`[^`]*`")
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.$])[a-zA-Z_:][\w:]*")
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"})
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*\w+\s*\)\s*$", re.S)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are no
    function, aggregation, keyword, label or duration."""
    text = _STRINGS.sub('""', expr)
    text = _MATCHERS.sub("", text)
    text = _RANGES.sub("", text)
    text = _LABEL_LISTS.sub("", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        if text[match.end():].lstrip().startswith("("):
            continue  # a function or an aggregation
        if match.group().lower() not in _KEYWORDS:
            names.add(match.group())
    return names


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))  # a collapsed row keeps its panels inside


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def dashboard_panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    return list(_panels(board["panels"]))


def dashboard_expressions(board: dict[str, Any]) -> list[str]:
    """Every query of the dashboard: its panels' targets and its variables'
    label_values(selector, label) selectors."""
    exprs = [t["expr"] for p in _panels(board["panels"]) for t in p.get("targets", ()) if t.get("expr")]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
            selector = _LABEL_VALUES.match(query)
            exprs.append(selector.group(1) if selector else query)
    return exprs


def filled_queries(board: dict[str, Any], job: str, rate_interval: str = "1m") -> list[str]:
    """The dashboard's queries as Grafana sends them for cluster `job`, every
    node chosen, and a range of an hour."""
    variables = {"$__rate_interval": rate_interval, "$__range": "1h", "$job": job, "$instance": ".*"}
    queries = []
    for expr in dashboard_expressions(board):
        for variable, value in variables.items():
            expr = expr.replace(variable, value)
        queries.append(expr)
    return queries


def rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def named_metrics() -> set[str]:
    """The metric names the dashboard and the rules read from the nodes:
    not those the rules record themselves, nor Prometheus' own `up`."""
    all_rules = rules()
    names = set().union(*map(metric_names, dashboard_expressions(dashboard())),
                        *(metric_names(r["expr"]) for r in all_rules))
    return names - {r["record"] for r in all_rules if "record" in r} - PROMETHEUS_OWN
