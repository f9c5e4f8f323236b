"""UpdateFeatures (KIP-584, KIP-778), and the feature checks of a broker's registration.

A level is finalized only if this controller's software supports it and
every registered broker's does (what it registered); a broker whose
software does not support a finalized level is not registered
(UNSUPPORTED_VERSION), as Kafka's controller does. metadata.version is never
lowered: Kafka refuses its safe downgrade (it might drop metadata newer
levels hold) and does not implement the unsafe one; other features may go
down with a downgrade type, never below what a broker supports.

A request is all or nothing, as Kafka's controller answers it since
UpdateFeatures v2: one refused update refuses them all, nothing is written.
The finalized levels are FeatureLevelRecords; the active controller writes
only the record kinds the finalized metadata.version allows (`gate`).
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Optional

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum import features
from metadata_quorum.features import METADATA_VERSION, FeatureRange
from metadata_quorum.image import MetadataImage

from .errors import ControllerError, Error
from .result import ControllerResult

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # Kafka's FeatureUpdate.UpgradeType
UPGRADE_TYPES = {UPGRADE: "upgrade", SAFE_DOWNGRADE: "safe downgrade", UNSAFE_DOWNGRADE: "unsafe downgrade"}
MAX_NAME_BYTES = 2**15 - 1  # a Kafka string


def update_features(image: MetadataImage, request: cpb.UpdateFeaturesRequest, node_id: int,
                    supported: Mapping[str, FeatureRange] = features.SUPPORTED) -> ControllerResult:
    response = cpb.UpdateFeaturesResponse(controller_id=node_id)
    names = [update.feature for update in request.feature_updates]
    twice = next((name for name, count in Counter(names).items() if count > 1), None)
    if twice is not None:  # refused whole before any item, as Kafka's broker does: no results
        response.error_code = Error.INVALID_REQUEST
        response.error_message = f"The request contains multiple updates of feature {twice[:64]}"
        return ControllerResult([], response)
    records: list[mpb.MetadataRecord] = []
    refusal: Optional[ControllerError] = None
    for update in request.feature_updates:
        try:
            record = _check(image, update, supported)
        except ControllerError as exc:
            refusal = refusal or exc
            response.results.add(feature=update.feature, error_code=exc.error, error_message=exc.message)
            continue
        response.results.add(feature=update.feature)
        if record is not None:
            records.append(mpb.MetadataRecord(feature_level=record))
    if refusal is not None:
        response.error_code, response.error_message = refusal.error, refusal.message
        return ControllerResult([], response)
    return ControllerResult([] if request.validate_only else records, response)


def _check(image: MetadataImage, update: cpb.UpdateFeaturesRequest.FeatureUpdate,
           supported: Mapping[str, FeatureRange]) -> Optional[mpb.FeatureLevelRecord]:
    """The record finalizing one update (None: the level is in force already), or ControllerError."""
    name, level = update.feature, update.max_version_level
    if not name or len(name.encode()) > MAX_NAME_BYTES:
        raise ControllerError(Error.INVALID_REQUEST, "Feature name can not be empty or longer than a Kafka string")
    if update.upgrade_type not in UPGRADE_TYPES:
        raise ControllerError(Error.INVALID_REQUEST, f"Unknown upgrade type {update.upgrade_type} for feature {name[:64]}")
    local = supported.get(name)
    if local is None or features.is_internal(name):
        raise ControllerError(Error.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature "
                                                            f"{name[:64]}. The controller does not support this feature.")
    current = features.finalized(image.features).get(name, 0)
    if name == METADATA_VERSION and level < current:
        # KIP-778: a lower metadata.version may not read what a higher one wrote.
        why = ("Unsafe metadata downgrade is not supported in this version."
               if update.upgrade_type == UNSAFE_DOWNGRADE else
               "Refusing to perform the requested downgrade because it might delete metadata information.")
        raise ControllerError(Error.INVALID_UPDATE_VERSION, f"Invalid metadata.version {level}. {why}")
    if level < current and update.upgrade_type == UPGRADE:
        raise ControllerError(Error.INVALID_UPDATE_VERSION, f"Can't downgrade the version of {name} from {current} "
                                                            f"to {level} without setting the upgrade type to either "
                                                            "safe or unsafe downgrade.")
    if level > current and update.upgrade_type != UPGRADE:
        raise ControllerError(Error.INVALID_UPDATE_VERSION, f"Can't upgrade {name} from {current} to {level} "
                                                            f"with upgrade type {UPGRADE_TYPES[update.upgrade_type]}.")
    # Level 0 turns a feature off, which every node supports; metadata.version has no off.
    if (level != 0 or name == METADATA_VERSION) and not local.supports(level):
        raise ControllerError(Error.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {name}. "
                                                            f"Local controller only supports versions {local.describe()}")
    if level != 0:
        for broker in sorted(image.brokers.values(), key=lambda b: b.broker_id):
            theirs = registered_ranges(broker.features).get(name)
            if theirs is None or not theirs.supports(level):
                supports = theirs.describe() if theirs is not None else "none"
                raise ControllerError(Error.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature "
                                                                    f"{name}. Broker {broker.broker_id} only supports "
                                                                    f"versions {supports}")
    if name in image.features and image.features[name] == level:
        return None
    return mpb.FeatureLevelRecord(name=name, feature_level=level)


def registered_ranges(listed: tuple[tuple[str, int, int], ...]) -> dict[str, FeatureRange]:
    """A registered broker's supported ranges (features.UNLISTED where it lists none)."""
    return features.ranges_of(mpb.FeatureRange(name=n, min_supported_version=low, max_supported_version=high)
                              for n, low, high in listed)


def check_registration(image: MetadataImage, request: cpb.BrokerRegistrationRequest) -> None:
    """ControllerError unless the registering broker supports every finalized level."""
    for item in request.features:
        if not item.name or item.min_supported_version < 0 or item.max_supported_version < item.min_supported_version:
            raise ControllerError(Error.INVALID_REQUEST, f"bad supported range {item.min_supported_version}-"
                                                         f"{item.max_supported_version} of feature {item.name[:64]!r}")
    problem = features.unsupported(features.ranges_of(request.features), features.finalized(image.features))
    if problem is not None:
        raise ControllerError(Error.UNSUPPORTED_VERSION, f"Unable to register broker {request.broker_id}: {problem}")


def gate(image: MetadataImage, result: ControllerResult) -> Optional[str]:
    """Why the finalized metadata.version forbids writing `result`'s records (None: allowed)."""
    level = features.metadata_level(image.features)
    refused = features.refused_records(result.records, level)
    if not refused:
        return None
    return (f"metadata.version {level} does not allow {', '.join(refused)} records: "
            f"raise it with `kraftlog features upgrade` once every node supports the level that does")
