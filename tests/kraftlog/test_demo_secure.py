"""`kraftlog demo --secure`'s cluster: deploy/local.yaml made secured, each
node's properties checked by the launcher (the same path as `make demo`),
and the admin's password only in the owner-only cluster file."""
from __future__ import annotations

import stat

from devcluster.secured import CLIENT_LISTENER, client_addresses
from kraftlog.demo_cluster import CLUSTER_FILE
from kraftlog.demo_secure import secured_plans


def test_the_demo_cluster_secured(tmp_path) -> None:
    plans, password = secured_plans(CLUSTER_FILE, tmp_path)
    by_id = {p.node_id: p for p in plans}
    assert client_addresses(plans) == ["127.0.0.1:19891", "127.0.0.1:19892", "127.0.0.1:19893"]
    for plan in plans:
        props = plan.properties
        assert props["authorizer.class.name"].endswith("StandardAuthorizer")
        assert props["ssl.client.auth"] == "required" and plan.certs_dir == tmp_path / "data" / "certs"
        assert "PLAINTEXT" not in props["listeners"]
        assert {"User:admin", f"User:node-{plan.node_id}"} <= set(props["super.users"].split(";"))
        assert password not in repr(plan) and password not in str(props)
    assert by_id[4].properties["listener.security.protocol.map"].endswith(f"CLIENTS:{CLIENT_LISTENER}")
    assert {s.name for s in by_id[1].scram_users} == {"admin"}  # bootstrapped at format
    secured_file = tmp_path / "cluster-secured.yaml"
    assert password in secured_file.read_text() and stat.S_IMODE(secured_file.stat().st_mode) == 0o600
