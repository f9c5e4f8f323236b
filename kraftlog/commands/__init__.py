"""The `kraftlog` command groups, one module each.

Each module exposes `register(app)`, which adds its commands (or its sub-app)
to the root app; `kraftlog.cli` calls them all and owns nothing else.
"""
