"""Feature levels through any broker (KIP-584, KIP-778), as Kafka's Admin
describeFeatures/updateFeatures: DescribeFeatures is answered by the broker
from its image; UpdateFeatures is forwarded by it to the active controller.

Upgrade types are Kafka's FeatureUpdate.UpgradeType codes."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb

from .admin import ask_any_broker

if TYPE_CHECKING:
    from .cluster import Cluster

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def describe_features(cluster: "Cluster") -> dict[str, Any]:
    """{"supported": {name: [min, max]}, "finalized": {name: level}, "epoch": the broker's metadata offset}."""
    answer = ask_any_broker(cluster, "DescribeFeatures", bpb.DescribeFeaturesRequest())
    return {"supported": {f.name: [f.min_version, f.max_version] for f in answer.supported_features},
            "finalized": {f.name: f.max_version_level for f in answer.finalized_features},
            "epoch": answer.finalized_features_epoch}


def update_features(cluster: "Cluster", levels: Mapping[str, int], upgrade_type: int = UPGRADE,
                    validate_only: bool = False) -> None:
    """Finalize each feature at its level (all or nothing); raises the controller's refusal."""
    request = cpb.UpdateFeaturesRequest(validate_only=validate_only, feature_updates=[
        cpb.UpdateFeaturesRequest.FeatureUpdate(feature=name, max_version_level=level, upgrade_type=upgrade_type)
        for name, level in levels.items()])
    ask_any_broker(cluster, "UpdateFeatures", request)  # a refusal is the request's error, with the reason
