"""The node process: `server.py` runs one node (`process.roles` controller,
broker or both) from its flat, Kafka-named config (`server_config.py`), with
gRPC health, reflection and Prometheus metrics (`metrics/`).

`kraftlog server --config node.yaml` (kraftlog/commands/server.py) starts it;
nothing here imports the CLI, the local-cluster harness or the clients.
"""
