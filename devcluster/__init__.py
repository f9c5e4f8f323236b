"""The local-cluster harness: start and stop kraftlog nodes as processes on
this machine, for tests, the demo, chaos runs and benchmarks.

`launcher.py` turns a cluster file (deploy/*.yaml) into one node config and
one background process per node (`kraftlog cluster up|status|down`);
`local_processes.py` owns the processes and free ports; `local_cluster.py`
and `local_quorum.py` are the in-test handles of a whole cluster and of a
controller quorum (`quorum_log_client.py` talks to the records-only mode
of `metadata_quorum/records_only/`, which only tests and bench use);
`read_back.py` reads a whole topic back for the demo's and the tests'
checks. Nodes run as `python -m kraftlog server`, so nothing here imports
the `kraftlog` CLI package, nor chaos, bench or tests.
"""
