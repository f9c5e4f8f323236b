"""`kraftlog acls --add|--remove|--list`, like Kafka's kafka-acls.sh.

Adding: every resource x every principal x every host x every operation
becomes one binding (ALLOW for --allow-principal, DENY for
--deny-principal; hosts default to `*`, operations to All). Removing with
principals removes exactly those bindings; without, every ACL of the
resource (asked first, unless --force). Listing shows the ACLs of the
resources named (any pattern type unless --resource-pattern-type says), or
all of them, grouped per resource pattern as kafka-acls prints them.
"""
from __future__ import annotations

from itertools import groupby
from typing import Annotated, Optional

import typer

from client.errors import error_for_code
from client.security_admin import create_acls, delete_acls, describe_acls
from security.acl import (
    CLUSTER_NAME, SUPPORTED_OPERATIONS, WILDCARD_HOST, AclBinding, AclBindingFilter, AclOperation,
    AclPermissionType, PatternType, ResourceType,
)
from security.principal import parse_principal

from .common import BootstrapOption, ClusterTarget, CommandConfigOption, JsonOption, print_json

Strings = Annotated[list[str], typer.Option(show_default=False)]


def register(app: typer.Typer) -> None:
    app.command("acls")(acls)


def _resources(topics: list[str], groups: list[str], cluster: bool,
               transactional_ids: list[str]) -> list[tuple[ResourceType, str]]:
    resources = [(ResourceType.TOPIC, t) for t in topics] + [(ResourceType.GROUP, g) for g in groups]
    resources += [(ResourceType.TRANSACTIONAL_ID, t) for t in transactional_ids]
    if cluster:
        resources.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return resources


def _operations(names: list[str], resources: list[tuple[ResourceType, str]]) -> list[AclOperation]:
    try:
        operations = [AclOperation.parse(n) for n in names] or [AclOperation.ALL]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--operation") from None
    for resource_type, _ in resources:
        supported = SUPPORTED_OPERATIONS[resource_type]
        refused = [op for op in operations if op not in supported]
        if refused:
            raise typer.BadParameter(
                f"ResourceType {resource_type.display} only supports operations "
                + ", ".join(sorted(op.display for op in supported)), param_hint="--operation")
    return operations


def _principals(texts: list[str], option: str) -> list[str]:
    for text in texts:
        try:
            parse_principal(text)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint=option) from None
    return texts


def _pattern(text: Optional[str], default: PatternType, allowed: tuple[PatternType, ...]) -> PatternType:
    if text is None:
        return default
    try:
        pattern = PatternType.parse(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--resource-pattern-type") from None
    if pattern not in allowed:
        raise typer.BadParameter(f"{pattern.name.lower()} is not allowed here; use one of "
                                 + ", ".join(p.name.lower() for p in allowed), param_hint="--resource-pattern-type")
    return pattern


def _entries(allow: list[str], deny: list[str], allow_hosts: list[str], deny_hosts: list[str],
             operations: list[AclOperation]) -> list[tuple[str, str, AclOperation, AclPermissionType]]:
    entries = []
    for principals, hosts, permission in ((allow, allow_hosts, AclPermissionType.ALLOW),
                                          (deny, deny_hosts, AclPermissionType.DENY)):
        for principal in principals:
            for host in hosts or [WILDCARD_HOST]:
                entries.extend((principal, host, op, permission) for op in operations)
    return entries


def _print_grouped(header: str, bindings: list[AclBinding]) -> None:
    for pattern, members in groupby(sorted(bindings), key=AclBinding.pattern_text):
        print(f"{header} `{pattern}`: ")
        for binding in members:
            print(f" \t{binding.entry_text()} ")
        print()


def _as_json(binding: AclBinding) -> dict[str, str]:
    return {"resource_type": binding.resource_type.name, "resource_name": binding.resource_name,
            "pattern_type": binding.pattern_type.name, "principal": binding.principal, "host": binding.host,
            "operation": binding.operation.name, "permission_type": binding.permission_type.name}


def acls(
    add: Annotated[bool, typer.Option("--add", help="Add the ACLs described.")] = False,
    remove: Annotated[bool, typer.Option("--remove", help="Remove the ACLs described.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List ACLs (of the resources named, else all).")] = False,
    allow_principal: Annotated[list[str], typer.Option(
        "--allow-principal", metavar="TYPE:NAME", help="Allowed principal, e.g. User:alice (User:* for all).",
        show_default=False)] = [],
    deny_principal: Annotated[list[str], typer.Option(
        "--deny-principal", metavar="TYPE:NAME", help="Denied principal.", show_default=False)] = [],
    allow_host: Annotated[list[str], typer.Option("--allow-host", metavar="HOST", help="Host of --allow-principal (default *).",
                                                  show_default=False)] = [],
    deny_host: Annotated[list[str], typer.Option("--deny-host", metavar="HOST", help="Host of --deny-principal (default *).",
                                                 show_default=False)] = [],
    operation: Annotated[list[str], typer.Option(
        "--operation", metavar="OP", help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
        "AlterConfigs, IdempotentWrite or All (default All).", show_default=False)] = [],
    topic: Annotated[list[str], typer.Option("--topic", metavar="TOPIC", help="A topic (* for every topic).",
                                             show_default=False)] = [],
    group: Annotated[list[str], typer.Option("--group", metavar="GROUP", help="A consumer group.", show_default=False)] = [],
    cluster: Annotated[bool, typer.Option("--cluster", help="The cluster.")] = False,
    transactional_id: Annotated[list[str], typer.Option("--transactional-id", metavar="ID", help="A transactional id.",
                                                        show_default=False)] = [],
    pattern_type: Annotated[Optional[str], typer.Option(
        "--resource-pattern-type", metavar="literal|prefixed|any|match",
        help="Add/remove: literal (default) or prefixed; list: any (default), match, literal or prefixed.",
        show_default=False)] = None,
    principal: Annotated[list[str], typer.Option("--principal", metavar="TYPE:NAME", help="--list: only these principals' ACLs.",
                                                 show_default=False)] = [],
    force: Annotated[bool, typer.Option("--force", help="Do not ask before removing.")] = False,
    as_json: JsonOption = False,
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Add, remove or list ACLs (Kafka's kafka-acls)."""
    target = ClusterTarget(bootstrap, command_config)
    if sum((add, remove, list_)) != 1:
        raise typer.BadParameter("give exactly one of --add, --remove, --list")
    resources = _resources(topic, group, cluster, transactional_id)
    allow = _principals(allow_principal, "--allow-principal")
    deny = _principals(deny_principal, "--deny-principal")
    if list_:
        _list(resources, _pattern(pattern_type, PatternType.ANY, tuple(PatternType)[1:]),
              _principals(principal, "--principal"), as_json, target)
        return
    if not resources:
        raise typer.BadParameter("name a resource: --topic, --group, --cluster or --transactional-id")
    pattern = _pattern(pattern_type, PatternType.LITERAL, (PatternType.LITERAL, PatternType.PREFIXED))
    operations = _operations(operation, resources)
    entries = _entries(allow, deny, allow_host, deny_host, operations)
    if add:
        if not entries:
            raise typer.BadParameter("--add needs --allow-principal or --deny-principal")
        _add(resources, pattern, entries, target)
    else:
        _remove(resources, pattern, entries, force, target)


def _add(resources, pattern, entries, target) -> None:  # type: ignore[no-untyped-def]
    bindings = [AclBinding(rtype, name, pattern, principal, host, op, permission)
                for rtype, name in resources for principal, host, op, permission in entries]
    with target.connect() as client:
        _print_grouped("Adding ACLs for resource", bindings)
        failures = [e for e in create_acls(client, bindings) if e is not None]
        if failures:
            # The others were added; the first refusal is the one line on stderr.
            first = failures[0]
            raise error_for_code(first.code, f"{len(failures)} of {len(bindings)} ACLs not added: {first.args[0]}")
        current = [b for rtype, name in resources
                   for b in describe_acls(client, AclBindingFilter(rtype, name, pattern))]
    _print_grouped("Current ACLs for resource", current)


def _remove(resources, pattern, entries, force, target) -> None:  # type: ignore[no-untyped-def]
    if entries:
        filters = [AclBindingFilter(rtype, name, pattern, principal, host, op, permission)
                   for rtype, name in resources for principal, host, op, permission in entries]
    else:
        filters = [AclBindingFilter(rtype, name, pattern) for rtype, name in resources]
    if not force:
        what = "these ACLs" if entries else "all ACLs for the resources named"
        if not typer.confirm(f"Are you sure you want to remove {what}?"):
            raise typer.Abort()
    with target.connect() as client:
        removed = [b for found in delete_acls(client, filters) for b in found]
    _print_grouped("Removed ACLs for resource", removed)
    if not removed:
        print("No ACLs matched: nothing removed.")


def _list(resources, pattern, principals, as_json, target) -> None:  # type: ignore[no-untyped-def]
    filters = [AclBindingFilter(rtype, name, pattern) for rtype, name in resources] or [
        AclBindingFilter(pattern_type=pattern)]
    with target.connect() as client:
        found = sorted({b for f in filters for b in describe_acls(client, f)
                        if not principals or b.principal in principals})
    if as_json:
        print_json([_as_json(b) for b in found])
        return
    _print_grouped("Current ACLs for resource", found)
