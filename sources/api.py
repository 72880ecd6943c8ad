"""REST endpoints for sources: list, add, show, change, and sync now. Curators of a source's
collection only; a source elsewhere is not found. Views validate, call one selector or service,
serialise."""

from django.core.validators import RegexValidator
from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from common.exceptions import CairnError
from common.fields import StrictCharField, StrictSlugField
from common.schema import error
from corpus.permissions import IsCurator
from corpus.selectors import collections_curated_by
from sources.models import SecretGrant, Source, SyncRun
from sources.selectors import runs_of, secrets_granted_for, sources_curated_by
from sources.services import (
    BRANCH,
    CREDENTIALS,
    LOCATIONS,
    SCHEDULE,
    source_create,
    source_sync_enqueue,
    source_update,
)


class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=SyncRun.Status.choices)
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    duration = serializers.FloatField(allow_null=True)
    complete = serializers.BooleanField(help_text="The listing was whole (only then is anything retracted).")
    counts = serializers.DictField(child=serializers.IntegerField())
    queued = serializers.IntegerField()
    done = serializers.IntegerField()
    error = serializers.CharField()
    errors = serializers.DictField(child=serializers.CharField(), help_text="Per item: why it failed or was skipped.")


class SourceOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField()
    location = serializers.CharField()
    collection = serializers.CharField(source="collection.slug")
    branch = serializers.CharField()
    credentials = serializers.CharField(
        help_text="The name of what holds the secret, never the secret: one granted to the collection (GET source-secrets)."
    )
    schedule = serializers.CharField()
    include = serializers.ListField(child=serializers.CharField())
    exclude = serializers.ListField(child=serializers.CharField())
    owner = serializers.CharField(source="owner.username", allow_null=True, default=None)
    enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SourceDetailOutputSerializer(SourceOutputSerializer):
    runs = RunOutputSerializer(many=True, source="recent_runs", help_text="The latest syncs, newest first.")


class SecretGrantOutputSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="What a source's credentials may name.")
    collection = serializers.CharField(source="collection.slug")
    scheme = serializers.ChoiceField(choices=SecretGrant.Scheme.values, help_text="Sent only over this scheme.")
    host = serializers.CharField(help_text="The only host the secret is sent to.")
    port = serializers.IntegerField(help_text="The only port it is sent to.")


class SyncQueuedSerializer(serializers.Serializer):
    source = serializers.CharField()
    status = serializers.CharField()


def _either_blank_or(pattern: str) -> str:
    return f"^$|{pattern}"


def _shaped(field: str, *, required: bool = False, **kwargs) -> StrictCharField:
    """A field of a source's, checked against its pattern (sources/services.py) as the schema shows
    it, untrimmed: a pattern says where the value starts and ends, so " /srv/docs" is not a path."""
    validators = [RegexValidator(PATTERNS[field], message=f"not a valid {field}")]
    return StrictCharField(required=required, trim_whitespace=False, validators=validators, **kwargs)


PATTERNS = {"branch": _either_blank_or(BRANCH), "credentials": _either_blank_or(CREDENTIALS),
            "schedule": _either_blank_or(SCHEDULE), "location": "|".join(f"(?:{p})" for p in LOCATIONS.values())}  # fmt: skip


class SourceChangeSerializer(serializers.Serializer):
    location = _shaped("location", max_length=1000)
    branch = _shaped("branch", max_length=200, allow_blank=True)
    credentials = _shaped("credentials", max_length=500, allow_blank=True)
    schedule = _shaped("schedule", max_length=100, allow_blank=True)
    include = serializers.ListField(child=StrictCharField(max_length=200), required=False, max_length=100)
    exclude = serializers.ListField(child=StrictCharField(max_length=200), required=False, max_length=100)
    enabled = serializers.BooleanField(required=False)

    schema_constraints = {"additionalProperties": False}  # a kind or collection cannot change: add a source


class SourceCreateSerializer(SourceChangeSerializer):
    name = StrictSlugField(max_length=100)
    kind = serializers.ChoiceField(choices=Source.Kind.values)
    location = _shaped("location", required=True, max_length=1000)
    collection = StrictSlugField()

    # Each kind its location's shape; only git has a branch.
    schema_constraints = {
        "oneOf": [
            {"properties": {"kind": {"enum": [kind]}, "location": {"pattern": pattern},
                            **({} if kind == Source.Kind.GIT else {"branch": {"maxLength": 0}})}}
            for kind, pattern in LOCATIONS.items()
        ]
    }  # fmt: skip


def _curated_source(user, name: str) -> Source:
    return get_object_or_404(sources_curated_by(user=user), name=name)


def _detail(source: Source) -> dict:
    source.recent_runs = runs_of(source=source)
    return SourceDetailOutputSerializer(source).data


class SourceListApi(APIView):
    """Curators: the sources of the collections they curate; add one."""

    permission_classes = [IsCurator]

    @extend_schema(responses=SourceOutputSerializer(many=True))
    def get(self, request):
        return Response(SourceOutputSerializer(sources_curated_by(user=request.user), many=True).data)

    @extend_schema(
        request=SourceCreateSerializer,
        responses={
            201: SourceDetailOutputSerializer,
            400: error("A field at fault: a location not of this kind's shape, a schedule, credentials."),
            403: error(
                "Not yours to add: a folder outside CAIRN_SOURCES_FOLDER_ROOTS, an ssh or git:// repository "
                "(operators add those), a secret not granted to the collection for the location's scheme, host and port."
            ),
            404: error("No collection by that name that you curate, or no folder or repository at the location."),
            409: error("A source by that name exists already."),
        },
    )
    def post(self, request):
        data = SourceCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        slug = fields.pop("collection")
        collection = collections_curated_by(user=request.user).filter(slug=slug).first()
        if collection is None:
            raise CairnError("collection", f"you curate no collection {slug!r}", status_code=status.HTTP_404_NOT_FOUND)
        source = source_create(actor=request.user, collection=collection, owner=request.user, **fields)
        return Response(_detail(source), status=status.HTTP_201_CREATED)


class SourceDetailApi(APIView):
    """Curators: a source with its latest syncs; change it (not its kind or collection)."""

    permission_classes = [IsCurator]

    @extend_schema(responses=SourceDetailOutputSerializer)
    def get(self, request, name: str):
        return Response(_detail(_curated_source(request.user, name)))

    @extend_schema(
        request=SourceChangeSerializer,
        responses={
            200: SourceDetailOutputSerializer,
            403: error("Not yours to set: as for adding a source (a folder outside the roots, an ungranted secret)."),
            404: error("No source by that name that you curate, or no folder or repository at the location."),
            409: error("A location or branch of another kind of source's shape than this one's."),
        },
    )
    def patch(self, request, name: str):
        source = _curated_source(request.user, name)
        unknown = sorted(set(request.data) - set(SourceChangeSerializer().fields))
        if unknown:
            raise CairnError(unknown[0], "cannot be changed: add a new source instead")
        data = SourceChangeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        source = source_update(source=source, actor=request.user, **data.validated_data)
        return Response(_detail(source))

    put = patch


class SourceSyncApi(APIView):
    """Curators: sync a source now (queued for the workers; its run shows on the source)."""

    permission_classes = [IsCurator]

    @extend_schema(request=None, responses={202: SyncQueuedSerializer, 409: error("The source is disabled.")})
    def post(self, request, name: str):
        source = _curated_source(request.user, name)
        with transaction.atomic():
            source_sync_enqueue(source=source, actor=request.user)
        return Response({"source": source.name, "status": "queued"}, status=status.HTTP_202_ACCEPTED)


class SecretGrantListApi(APIView):
    """Curators: the secrets an operator granted to the collections they curate, each for one scheme,
    host and port: the only names a source's credentials may take (manage.py sources grant-secret)."""

    permission_classes = [IsCurator]

    @extend_schema(responses=SecretGrantOutputSerializer(many=True))
    def get(self, request):
        return Response(SecretGrantOutputSerializer(secrets_granted_for(user=request.user), many=True).data)
