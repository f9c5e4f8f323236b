"""DescribeFeatures: the feature levels this broker's software supports and
those the cluster finalized, from the broker's metadata image, as Kafka's
ApiVersions answer carries them (kafka-features.sh describe reads them there)."""
from __future__ import annotations

from kraftlog_api import broker_pb2 as bpb
from metadata_quorum import features
from metadata_quorum.image import MetadataImage


def describe_features(image: MetadataImage) -> bpb.DescribeFeaturesResponse:
    Supported, Finalized = bpb.DescribeFeaturesResponse.SupportedFeature, bpb.DescribeFeaturesResponse.FinalizedFeature
    return bpb.DescribeFeaturesResponse(
        supported_features=[Supported(name=r.name, min_version=r.min_level, max_version=r.max_level)
                            for r in features.SUPPORTED.values()],
        finalized_features=[Finalized(name=name, max_version_level=level)
                            for name, level in sorted(features.finalized(image.features).items())],
        finalized_features_epoch=image.offset)
