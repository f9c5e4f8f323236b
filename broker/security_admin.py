"""DescribeAcls and DescribeUserScramCredentials, answered from the broker's
metadata image (the writes, CreateAcls, DeleteAcls and
AlterUserScramCredentials, are forwarded to the controller).

A credential is described by its mechanism and iterations only: never its
salt or keys, as Kafka's DescribeUserScramCredentials."""
from __future__ import annotations

from collections import Counter

from kraftlog_api import broker_pb2 as bpb
from metadata_quorum.image import MetadataImage
from security.acl_proto import binding_to_proto, filter_from_proto

from .errors import Error

ScramResult = bpb.DescribeUserScramCredentialsResponse.Result


def describe_acls(image: MetadataImage, request: bpb.DescribeAclsRequest) -> bpb.DescribeAclsResponse:
    acl_filter = filter_from_proto(request.filter)
    unknown = acl_filter.unknown_field()
    if unknown is not None:
        return bpb.DescribeAclsResponse(error_code=Error.INVALID_REQUEST,
                                        error_message=f"The filter's {unknown} is UNKNOWN")
    return bpb.DescribeAclsResponse(acls=[binding_to_proto(b) for b in image.acl_index().matching(acl_filter)])


def describe_user_scram_credentials(image: MetadataImage, request: bpb.DescribeUserScramCredentialsRequest
                                    ) -> bpb.DescribeUserScramCredentialsResponse:
    """Every user with a credential when none is named; otherwise each named
    user once (a user named twice: DUPLICATE_RESOURCE; without any
    credential: RESOURCE_NOT_FOUND)."""
    infos: dict[str, list[bpb.DescribeUserScramCredentialsResponse.CredentialInfo]] = {}
    for (user, mechanism), credential in sorted(image.scram_credentials.items()):
        infos.setdefault(user, []).append(bpb.DescribeUserScramCredentialsResponse.CredentialInfo(
            mechanism=mechanism, iterations=credential.iterations))
    response = bpb.DescribeUserScramCredentialsResponse()
    if not request.users:
        response.results.extend(ScramResult(user=user, credential_infos=found) for user, found in infos.items())
        return response
    counts = Counter(request.users)
    for user in dict.fromkeys(request.users):
        if counts[user] > 1:
            response.results.add(user=user, error_code=Error.DUPLICATE_RESOURCE,
                                 error_message="Cannot describe SCRAM credentials for the same user twice in a single request")
        elif user not in infos:
            response.results.add(user=user, error_code=Error.RESOURCE_NOT_FOUND,
                                 error_message="Attempt to describe a user credential that does not exist")
        else:
            response.results.add(user=user, credential_infos=infos[user])
    return response
