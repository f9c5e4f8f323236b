"""kraftlog's clients: what programs and the `kraftlog` CLI use to talk to a cluster.

Only the generated gRPC API (`kraftlog_api`) and Kafka's error vocabulary
are shared with the servers; everything else a client knows it learns over
the wire. `client.admin` holds the operator calls (DescribeQuorum, ...).
"""
