"""`kraftlog features describe|upgrade|downgrade`, like Kafka's kafka-features.sh:
the feature levels the brokers' software supports and those the cluster
finalized (metadata.version, KIP-778), and raising them once every node runs
software that supports the new level (metadata_quorum/features.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from client.feature_admin import SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE, describe_features, update_features
from metadata_quorum.features import METADATA_LEVELS, METADATA_VERSION, level_name

from .common import BootstrapOption, CommandConfigOption, JsonOption, connect, print_json

features_app = typer.Typer(help="Describe and change the cluster's finalized feature levels (metadata.version).",
                           no_args_is_help=True)

MetadataOption = Annotated[Optional[str], typer.Option(
    "--metadata", metavar="LEVEL", show_default=False,
    help=f"The metadata.version: a level number or its name ({', '.join(m.name for m in METADATA_LEVELS)}).")]
FeatureOption = Annotated[Optional[list[str]], typer.Option(
    "--feature", metavar="NAME=LEVEL", show_default=False, help="A feature and its level; repeatable.")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Check with the controller, change nothing.")]


def register(app: typer.Typer) -> None:
    app.add_typer(features_app, name="features")


@features_app.command("describe")
def describe(as_json: JsonOption = False, bootstrap: BootstrapOption = None,
             command_config: CommandConfigOption = None) -> None:
    """Each feature: the levels the answering broker supports, the finalized level, and the metadata offset (epoch)."""
    with connect(bootstrap, command_config) as cluster:
        info = describe_features(cluster)
    if as_json:
        print_json(info)
        return
    for name in sorted(set(info["supported"]) | set(info["finalized"])):
        low, high = info["supported"].get(name, [0, 0])
        level = info["finalized"].get(name, 0)
        shown = (lambda v: level_name(v)) if name == METADATA_VERSION else str
        print(f"Feature: {name}\tSupportedMinVersion: {shown(low)}\tSupportedMaxVersion: {shown(high)}\t"
              f"FinalizedVersionLevel: {shown(level) if level else '-'}\tEpoch: {info['epoch']}")


@features_app.command("upgrade")
def upgrade(metadata: MetadataOption = None, feature: FeatureOption = None, dry_run: DryRunOption = False,
            bootstrap: BootstrapOption = None, command_config: CommandConfigOption = None) -> None:
    """Raise feature levels; the controller refuses a level any registered broker does not support."""
    _update(metadata, feature, UPGRADE, dry_run, bootstrap, command_config, "upgraded")


@features_app.command("downgrade")
def downgrade(metadata: MetadataOption = None, feature: FeatureOption = None,
              unsafe: Annotated[bool, typer.Option("--unsafe", help="An unsafe downgrade (may lose metadata).")] = False,
              dry_run: DryRunOption = False, bootstrap: BootstrapOption = None,
              command_config: CommandConfigOption = None) -> None:
    """Lower feature levels. metadata.version is never lowered (Kafka refuses it: a lower level
    may not read what a higher one wrote); the controller says so."""
    _update(metadata, feature, UNSAFE_DOWNGRADE if unsafe else SAFE_DOWNGRADE, dry_run, bootstrap, command_config,
            "downgraded")


def _update(metadata: Optional[str], feature: Optional[list[str]], upgrade_type: int, dry_run: bool,
            bootstrap: Optional[str], command_config: Optional[Path], done: str) -> None:
    levels = parse_levels(metadata, feature or [])
    with connect(bootstrap, command_config) as cluster:
        update_features(cluster, levels, upgrade_type, validate_only=dry_run)
    for name, level in levels.items():
        shown = level_name(level) if name == METADATA_VERSION else str(level)
        print(f"{name} can be {done} to {shown}" if dry_run else f"{name} was {done} to {shown}.")


def parse_levels(metadata: Optional[str], features: list[str]) -> dict[str, int]:
    """--metadata and --feature NAME=LEVEL as {name: level}; typer.BadParameter for what does not parse."""
    levels: dict[str, int] = {}
    if metadata is not None:
        levels[METADATA_VERSION] = _metadata_level(metadata)
    for item in features:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name or not text.strip().lstrip("-").isdigit():
            raise typer.BadParameter(f"{item!r}: expected NAME=LEVEL with an integer level", param_hint="--feature")
        if name in levels:
            raise typer.BadParameter(f"{name} is given twice", param_hint="--feature")
        levels[name] = int(text)
    if not levels:
        raise typer.BadParameter("give --metadata LEVEL or --feature NAME=LEVEL")
    return levels


def _metadata_level(text: str) -> int:
    named = {m.name: m.level for m in METADATA_LEVELS}
    if text in named:
        return named[text]
    if text.strip().isdigit():
        return int(text)
    raise typer.BadParameter(f"{text!r}: expected a level number or one of {', '.join(named)}", param_hint="--metadata")
