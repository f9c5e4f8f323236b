"""Generated protobuf and gRPC modules for kraftlog's wire API.

Sources: `proto/kraftlog_api/*.proto`. Do not edit the `*_pb2*.py(i)` files:
run `make proto` and commit the result (a test fails when they are stale).
"""
