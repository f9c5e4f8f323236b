"""`kraftlog configs describe|alter`, like Kafka's kafka-configs.sh: the settings of a
topic, of a broker, or the cluster-wide broker defaults (--broker-defaults), and
the client-quota entities, users and client ids (--entity-type users|clients,
--user, --client ...: quotas in quota_configs.py, users' SCRAM credentials in
scram_users.py)."""
from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich import box
from rich.table import Table

from client.admin import APPEND, BROKER, DELETE, SET, SUBTRACT, TOPIC, alter_configs, describe_configs
from security.client_quotas import QuotaEntity

from .common import (
    BootstrapOption, ClusterTarget, CommandConfigOption, JsonOption, connect, output_console, parse_config_list,
    parse_names, print_json,
)
from .quota_configs import alter_quota_entity, describe_quota_entity, quota_entity_of

configs_app = typer.Typer(help="Describe and change topic and broker settings.", no_args_is_help=True)

TopicOption = Annotated[Optional[str], typer.Option("--topic", help="A topic's settings.", show_default=False)]
BrokerOption = Annotated[Optional[int], typer.Option("--broker", help="A broker's settings, by its id.",
                                                     show_default=False)]
EntityTypeOption = Annotated[Optional[str], typer.Option(
    "--entity-type", metavar="users|clients", help="users: quotas and SCRAM credentials; clients: quotas of "
    "client ids (topics and brokers: --topic, --broker).", show_default=False)]
EntityNameOption = Annotated[Optional[str], typer.Option(
    "--entity-name", metavar="NAME", help="With --entity-type: the user or client id (describe: all of them "
    "without it).", show_default=False)]
EntityDefaultOption = Annotated[bool, typer.Option(
    "--entity-default", help="With --entity-type: the default user or client id (<default>).")]
UserOption = Annotated[Optional[str], typer.Option("--user", metavar="NAME", help="A user's quotas (with "
                                                   "--client: for that client id).", show_default=False)]
UserDefaultsOption = Annotated[bool, typer.Option("--user-defaults", help="The default user's quotas.")]
ClientOption = Annotated[Optional[str], typer.Option("--client", metavar="CLIENT_ID", help="A client id's quotas.",
                                                     show_default=False)]
ClientDefaultsOption = Annotated[bool, typer.Option("--client-defaults", help="The default client id's quotas.")]
DefaultsOption = Annotated[bool, typer.Option(
    "--broker-defaults", help="The cluster-wide dynamic broker defaults (every broker, every topic falls back "
    "to them).")]
AddConfig = Annotated[list[str], typer.Option(
    "--add-config", metavar="K=V[,K=V...]", help="Set settings; a list value in brackets: k=[v1,v2].")]
DeleteConfig = Annotated[list[str], typer.Option(
    "--delete-config", metavar="K[,K...]", help="Remove overrides (back to the inherited value).")]
AppendConfig = Annotated[list[str], typer.Option(
    "--append-config", metavar="K=V", help="Add items to a list setting (cleanup.policy).")]
SubtractConfig = Annotated[list[str], typer.Option(
    "--subtract-config", metavar="K=V", help="Remove items from a list setting (cleanup.policy).")]


def register(app: typer.Typer) -> None:
    app.add_typer(configs_app, name="configs")


def _quota_entity(entity: Optional[QuotaEntity], others: bool) -> Optional[QuotaEntity]:
    """The client-quota entity named, alone (None: a topic or broker is meant)."""
    if entity is not None and others:
        raise typer.BadParameter("users and client ids go without --topic, --broker or --broker-defaults")
    return entity


def _resource(topic: Optional[str], broker: Optional[int], defaults: bool) -> tuple[int, str, str]:
    """(resource type, resource name, words for messages) of the one entity named."""
    if sum((topic is not None, broker is not None, defaults)) != 1:
        raise typer.BadParameter("name exactly one of --topic, --broker, --broker-defaults")
    if topic is not None:
        return TOPIC, topic, f"topic {topic}"
    if broker is not None:
        return BROKER, str(broker), f"broker {broker}"
    return BROKER, "", "the cluster-wide broker defaults"


@configs_app.command("describe")
def describe(
    topic: TopicOption = None,
    broker: BrokerOption = None,
    broker_defaults: DefaultsOption = False,
    entity_type: EntityTypeOption = None,
    entity_name: EntityNameOption = None,
    entity_default: EntityDefaultOption = False,
    user: UserOption = None,
    user_defaults: UserDefaultsOption = False,
    client: ClientOption = None,
    client_defaults: ClientDefaultsOption = False,
    show_all: Annotated[bool, typer.Option(
        "--all", help="Every setting with its effective value, not only the dynamic ones.")] = False,
    as_json: JsonOption = False,
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Dynamic settings of the entity (with --all: every setting, its value and where it comes from);
    users and client ids: their quotas, and users their SCRAM mechanisms and iterations (never a salt or a key)."""
    entity = _quota_entity(quota_entity_of(entity_type, entity_name, entity_default, user, user_defaults, client,
                                           client_defaults), topic is not None or broker is not None or broker_defaults)
    if entity is not None:
        describe_quota_entity(entity, as_json, ClusterTarget(bootstrap, command_config))
        return
    kind, name, words = _resource(topic, broker, broker_defaults)
    with connect(bootstrap, command_config) as cluster:
        settings = describe_configs(cluster, kind, [name])[name]
    if not show_all:
        settings = [s for s in settings if s["source"].startswith("DYNAMIC_")]
    if as_json:
        print_json(settings)
        return
    console = output_console()
    console.print(f"{'All' if show_all else 'Dynamic'} configs for {words} are:")
    if not settings:
        return
    table = Table("Name", "Value", "Source", "ReadOnly", box=box.SIMPLE_HEAD)
    for s in settings:
        table.add_row(s["name"], s["value"], s["source"], "yes" if s["read_only"] else "no")
    console.print(table)


def alter_entity(kind: int, name: str, words: str, add: list[str], delete: list[str], append: list[str],
                 subtract: list[str], target: ClusterTarget) -> None:
    operations = [(k, SET, v) for text in add for k, v in parse_config_list(text, "--add-config")]
    operations += [(k, DELETE, None) for k in parse_names(delete)]
    operations += [(k, APPEND, v) for text in append for k, v in parse_config_list(text, "--append-config")]
    operations += [(k, SUBTRACT, v) for text in subtract for k, v in parse_config_list(text, "--subtract-config")]
    if not operations:
        raise typer.BadParameter("give --add-config, --delete-config, --append-config or --subtract-config")
    with target.connect() as cluster:
        alter_configs(cluster, kind, name, operations)
    print(f"Completed updating config for {words}.")


@configs_app.command("alter")
def alter(
    topic: TopicOption = None,
    broker: BrokerOption = None,
    broker_defaults: DefaultsOption = False,
    entity_type: EntityTypeOption = None,
    entity_name: EntityNameOption = None,
    entity_default: EntityDefaultOption = False,
    user: UserOption = None,
    user_defaults: UserDefaultsOption = False,
    client: ClientOption = None,
    client_defaults: ClientDefaultsOption = False,
    add_config: AddConfig = [],
    delete_config: DeleteConfig = [],
    append_config: AppendConfig = [],
    subtract_config: SubtractConfig = [],
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Change settings: all of them or none (one bad setting changes nothing). Users and client ids:
    quotas, --add-config 'producer_byte_rate=1024,consumer_byte_rate=2048' or --delete-config producer_byte_rate;
    users also --add-config 'SCRAM-SHA-512=[iterations=8192,password=...]' (salted and hashed here, never sent)
    or --delete-config SCRAM-SHA-512."""
    entity = _quota_entity(quota_entity_of(entity_type, entity_name, entity_default, user, user_defaults, client,
                                           client_defaults), topic is not None or broker is not None or broker_defaults)
    if entity is not None:
        if append_config or subtract_config:
            raise typer.BadParameter("users and client ids take --add-config and --delete-config only")
        alter_quota_entity(entity, add_config, delete_config, ClusterTarget(bootstrap, command_config))
        return
    kind, name, words = _resource(topic, broker, broker_defaults)
    alter_entity(kind, name, words, add_config, delete_config, append_config, subtract_config,
                 ClusterTarget(bootstrap, command_config))
