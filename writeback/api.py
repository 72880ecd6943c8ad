"""REST endpoints of the curators' review of write-backs: the queue, approve, reject. Every
decision goes through writeback.review, as the admin's do."""

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from common.fields import StrictCharField
from common.schema import error
from corpus.permissions import IsCurator
from writeback.models import WriteBack
from writeback.review import writeback_approve, writeback_dismiss
from writeback.selectors import writeback_list, writebacks_curated_by


class WriteBackSerializer(serializers.ModelSerializer):
    collection = serializers.CharField(source="collection.slug")
    document_id = serializers.IntegerField(allow_null=True)
    reviewer = serializers.CharField(source="reviewer.username", allow_null=True, default=None)
    thresholds = serializers.SerializerMethodField()
    askings = serializers.SlugRelatedField(
        many=True, read_only=True, slug_field="question", help_text="Each question merged into it, first asked first."
    )

    class Meta:
        model = WriteBack
        fields = [
            "id", "response_id", "status", "question", "asked", "askings", "answer", "collection", "grounding",
            "attribution", "novelty", "relevance",
            "thresholds", "sentences", "nearest", "critique", "held", "evidence", "document_id", "reviewer",
            "review_note", "created_at", "validated_at", "reviewed_at", "published_at", "retracted_at",
        ]  # fmt: skip

    def get_thresholds(self, obj) -> dict:
        return {
            "grounding": settings.CAIRN_GROUNDING_THRESHOLD,
            "attribution": settings.CAIRN_ATTRIBUTION_THRESHOLD,
            "novelty": settings.CAIRN_NOVELTY_THRESHOLD,
            "relevance": settings.CAIRN_ANSWER_THRESHOLD,
        }


class WriteBackListApi(ListAPIView):
    """Curators: write-backs, the most-asked first, then the newest; `?status=` one of the statuses."""

    permission_classes = [IsCurator]
    serializer_class = WriteBackSerializer

    class FilterSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=WriteBack.Status.choices, required=False)

    @extend_schema(parameters=[FilterSerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        filters = self.FilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return writeback_list(user=self.request.user, status=filters.validated_data.get("status"))


class WriteBackApproveApi(APIView):
    permission_classes = [IsCurator]

    class ApproveInputSerializer(serializers.Serializer):
        answer = StrictCharField(
            required=False, max_length=20000, help_text="An edited answer (with [n] citations): validated again first."
        )
        note = StrictCharField(required=False, allow_blank=True, max_length=2000, default="")

    @extend_schema(
        request=ApproveInputSerializer,
        responses={
            200: WriteBackSerializer,
            409: error("The write-back is not pending review (or its collection is at its cap of published answers)."),
        },
    )
    def post(self, request, writeback_id: int):
        data = self.ApproveInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        writeback = get_object_or_404(writebacks_curated_by(user=request.user), id=writeback_id)
        return Response(
            WriteBackSerializer(writeback_approve(writeback, actor=request.user, **data.validated_data)).data
        )


class WriteBackRejectApi(APIView):
    permission_classes = [IsCurator]

    class RejectInputSerializer(serializers.Serializer):
        reason = StrictCharField(max_length=2000, help_text="Why: it becomes a critique future answers see.")

    @extend_schema(
        request=RejectInputSerializer,
        responses={200: WriteBackSerializer, 409: error("The write-back is not pending review.")},
    )
    def post(self, request, writeback_id: int):
        data = self.RejectInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        writeback = get_object_or_404(writebacks_curated_by(user=request.user), id=writeback_id)
        return Response(
            WriteBackSerializer(writeback_dismiss(writeback, actor=request.user, **data.validated_data)).data
        )
