"""deploy/monitoring/ without a cluster: promtool loads the alert rules and
the scrape configuration and runs the rules' unit tests (each alert firing
on a broken cluster's series, quiet on a healthy one's); every alert has
such a test; promtool parses every query of the dashboard, and each is
scoped to the chosen cluster; and the metric-name extraction that
test_metrics.py relies on.

promtool comes from Debian's prometheus package (`make prometheus-tools`
puts it in the venv without installing or starting a Prometheus service);
where it cannot be had, the promtool tests skip, saying so. A real
Prometheus over a real cluster is in test_metrics.py."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from .monitoring_files import (MONITORING, RULES, RULES_TEST, SCRAPE_CONFIG, TOOLS_MISSING, dashboard,
                               dashboard_expressions, dashboard_panels, filled_queries, find_tool, metric_names, named_metrics, rules)


@pytest.fixture(scope="module")
def promtool() -> str:
    found = find_tool("promtool")
    if found is None:
        pytest.skip(f"promtool {TOOLS_MISSING}")
    return found


def run_promtool(promtool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([promtool, *args], cwd=MONITORING, capture_output=True, text=True, timeout=60)


def test_promtool_loads_the_rules_and_the_scrape_configuration(promtool) -> None:
    checked = run_promtool(promtool, "check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(rules())} rules found" in checked.stdout
    config = run_promtool(promtool, "check", "config", SCRAPE_CONFIG.name)
    assert config.returncode == 0, config.stdout + config.stderr
    assert "WARNING" not in config.stdout + config.stderr


def test_each_alert_fires_on_a_broken_cluster_and_not_on_a_healthy_one(promtool) -> None:
    tested = run_promtool(promtool, "test", "rules", RULES_TEST.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_promtool_parses_every_dashboard_query(promtool, tmp_path) -> None:
    # promtool parses the PromQL of rules: each query, its variables filled in, becomes a recording rule.
    queries = []
    for expr in filled_queries(dashboard(), "kraftlog"):
        assert "$" not in expr, expr
        queries.append({"record": f"dashboard:query_{len(queries)}", "expr": expr})
    groups = {"groups": [{"name": "dashboard", "rules": queries}]}
    (tmp_path / "dashboard-queries.yaml").write_text(yaml.safe_dump(groups))
    checked = subprocess.run([promtool, "check", "rules", "dashboard-queries.yaml"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(queries)} rules found" in checked.stdout


def test_promtool_would_notice_a_broken_rule(promtool, tmp_path) -> None:
    # The unit tests are not vacuous: an alert that can no longer fire fails them.
    broken = RULES.read_text().replace("kafka_controller_kafkacontroller_offlinepartitionscount) > 0",
                                       "kafka_controller_kafkacontroller_offlinepartitionscount) > 1000")
    assert broken != RULES.read_text()
    (tmp_path / RULES.name).write_text(broken)
    shutil.copy(RULES_TEST, tmp_path / RULES_TEST.name)
    tested = subprocess.run([promtool, "test", "rules", RULES_TEST.name], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert tested.returncode != 0
    assert "KraftlogOfflinePartitions" in tested.stdout + tested.stderr


def test_every_alert_has_a_unit_test_where_it_fires() -> None:
    alerts = {r["alert"] for r in rules() if "alert" in r}
    cases = [case for test in yaml.safe_load(RULES_TEST.read_text())["tests"] for case in test["alert_rule_test"]]
    firing = {case["alertname"] for case in cases if case.get("exp_alerts")}
    assert alerts and firing == alerts
    for case in cases:
        for alert in case.get("exp_alerts") or ():
            # The healthy cluster of the unit tests never appears among the expected alerts.
            assert alert["exp_labels"]["job"] != "kraftlog", case


def test_the_dashboard_is_grouped_and_every_query_is_scoped_to_the_chosen_cluster() -> None:
    board = dashboard()
    panels = dashboard_panels(board)
    assert [p["title"] for p in panels if p["type"] == "row"] == [
        "Controller and metadata quorum", "Brokers", "Partitions", "Requests and traffic", "Storage"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in board["templating"]["list"]}
    assert variables == {"datasource", "job", "instance"}
    for panel in panels:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}" and panel.get("description"), panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            names = metric_names(expr)
            assert names, (panel["title"], expr)
            # Every series is selected in the chosen cluster: none of another job leaks in.
            for name in names:
                for use in re.finditer(rf"(?<![\w:]){re.escape(name)}(?![\w:])", expr):
                    assert expr.startswith('{job="$job"', use.end()), (panel["title"], expr)
    assert len(dashboard_expressions(board)) > 30


def test_the_rules_and_the_dashboard_name_the_metrics_docs_metrics_md_lists() -> None:
    documented = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    for name in named_metrics():
        family = name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
        assert f"`{family}" in documented or name.startswith("process_"), name


@pytest.mark.parametrize("expr, names", [
    ('sum by (job) (kafka_a{job="$job"}) != 1', {"kafka_a"}),
    ('histogram_quantile(0.99, sum by (le, request) (rate(lat_bucket{job="x", request="Produce"}[$__rate_interval])))',
     {"lat_bucket"}),
    ("max by (job) (a) - on (job) group_right () (b or c)", {"a", "b", "c"}),
    ("count by (job) (x) * 0 unless on (job) y", {"x", "y"}),
    ("increase(u_total[10m]) > 0 and deriv(rec:lag[10m]) > 0", {"u_total", "rec:lag"}),
    ('up{job=~"kraftlog.*"} == 0', {"up"}),
    ("sum(rate(a_total[5m] offset 1h)) / 1e3", {"a_total"}),
])
def test_metric_names_are_taken_from_promql(expr, names) -> None:
    assert metric_names(expr) == names


def test_every_metric_the_files_name_is_a_kraftlog_or_process_metric() -> None:
    names = named_metrics()
    assert "kafka_controller_kafkacontroller_activecontrollercount" in names
    assert not {n for n in names if not n.startswith(("kafka_", "kraftlog_", "process_"))}
