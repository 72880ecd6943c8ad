"""REST endpoints for asking questions, reading recorded answers, and health."""

from django.db import connection
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from corpus.embedder import embedder_loaded
from pipeline.models import Answer, Evidence
from pipeline.selectors import answer_get
from pipeline.services import question_answer


class StripSerializer(serializers.Serializer):
    text = serializers.CharField()
    relevance = serializers.FloatField()
    kept = serializers.BooleanField(help_text="Kept by knowledge refinement: what the generator saw.")


class EvidenceSerializer(serializers.ModelSerializer):
    chunk_id = serializers.IntegerField(allow_null=True, help_text="Empty for external and inferred evidence.")
    document_id = serializers.IntegerField(source="chunk.document_id", allow_null=True, default=None)
    strips = StripSerializer(many=True)
    notes = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = Evidence
        fields = [
            "n", "origin", "chunk_id", "document_id", "title", "source", "text", "bucket", "trust", "relevance",
            "consistency", "agreement", "strips", "notes", "cited", "vector_distance", "text_rank", "fused_score",
        ]  # fmt: skip


class CitationSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="The [n] in the answer; also the evidence item's n.")
    chunk_id = serializers.IntegerField(allow_null=True)
    origin = serializers.CharField()
    strips = serializers.ListField(child=serializers.CharField(), help_text="The refined strips the answer drew on.")


class AnswerSerializer(serializers.ModelSerializer):
    answer = serializers.CharField(source="text")
    citations = CitationSerializer(many=True)
    evidence = EvidenceSerializer(many=True)
    external = serializers.DictField(help_text="provider, query, results (count), error; empty when none ran.")
    notes = serializers.ListField(child=serializers.CharField())
    timings_ms = serializers.DictField(child=serializers.FloatField())

    class Meta:
        model = Answer
        fields = [
            "response_id", "question", "answer", "found", "mode", "action", "generator", "citations", "evidence",
            "external", "iterations", "agreement", "notes", "timings_ms", "created_at",
        ]  # fmt: skip


class QueryApi(APIView):
    class QueryInputSerializer(serializers.Serializer):
        question = serializers.CharField(max_length=2000)
        top_k = serializers.IntegerField(min_value=1, max_value=50, default=8)
        collections = serializers.ListField(
            child=serializers.SlugField(), required=False, allow_empty=False, max_length=100
        )
        mode = serializers.ChoiceField(choices=Answer.Mode.choices, default=Answer.Mode.STANDARD)
        generator = serializers.ChoiceField(choices=["extractive", "ollama"], required=False)

    @extend_schema(request=QueryInputSerializer, responses=AnswerSerializer)
    def post(self, request):
        data = self.QueryInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        state = question_answer(user=request.user, **data.validated_data)
        return Response(AnswerSerializer(answer_get(user=request.user, response_id=state.record.response_id)).data)


class AnswerDetailApi(APIView):
    @extend_schema(responses=AnswerSerializer)
    def get(self, request, response_id):
        answer = answer_get(user=request.user, response_id=response_id)
        if answer is None:
            raise NotFound("no answer with this response id for you")
        return Response(AnswerSerializer(answer).data)


class HealthOutputSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "unavailable"])
    database = serializers.BooleanField()
    vector_extension = serializers.CharField(allow_null=True, help_text="pgvector's installed version.")
    embedder_loaded = serializers.BooleanField()
    error = serializers.CharField(required=False)


class HealthApi(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: HealthOutputSerializer, 503: HealthOutputSerializer})
    def get(self, request):
        checks = {"database": False, "vector_extension": None, "embedder_loaded": embedder_loaded()}
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                row = cursor.fetchone()
            checks["database"] = True
            checks["vector_extension"] = row[0] if row else None
        except Exception as exc:  # noqa: BLE001 - health reports any database failure, never raises
            checks["error"] = str(exc)
        healthy = checks["database"] and checks["vector_extension"] is not None
        return Response(
            {"status": "ok" if healthy else "unavailable", **checks},
            status=status.HTTP_200_OK if healthy else status.HTTP_503_SERVICE_UNAVAILABLE,
        )
