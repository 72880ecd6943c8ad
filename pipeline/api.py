"""REST endpoints for asking questions and for health."""

from django.db import connection
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from corpus.embedder import embedder_loaded
from pipeline.services import question_answer


class EvidenceSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    collection_id = serializers.IntegerField()
    title = serializers.CharField()
    source = serializers.CharField()
    text = serializers.CharField()
    vector_distance = serializers.FloatField(allow_null=True)
    text_rank = serializers.FloatField(allow_null=True)
    fused_score = serializers.FloatField(source="score")
    cited = serializers.BooleanField()


class CitationSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="The [n] in the answer; also the evidence item's n.")
    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    title = serializers.CharField()
    source = serializers.CharField()


class AnswerOutputSerializer(serializers.Serializer):
    response_id = serializers.UUIDField()
    question = serializers.CharField()
    answer = serializers.CharField()
    citations = CitationSerializer(many=True)
    evidence = EvidenceSerializer(many=True)
    timings_ms = serializers.DictField(child=serializers.FloatField())


class QueryApi(APIView):
    class QueryInputSerializer(serializers.Serializer):
        question = serializers.CharField(max_length=2000)
        top_k = serializers.IntegerField(min_value=1, max_value=50, default=8)
        collections = serializers.ListField(
            child=serializers.SlugField(), required=False, allow_empty=False, max_length=100
        )

    @extend_schema(request=QueryInputSerializer, responses=AnswerOutputSerializer)
    def post(self, request):
        data = self.QueryInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        state = question_answer(user=request.user, **data.validated_data)
        cited = set(state.cited)
        evidence = [{"n": n, "cited": n in cited, **vars(hit)} for n, hit in enumerate(state.hits, start=1)]
        result = {
            "response_id": state.record.response_id,
            "question": state.question,
            "answer": state.answer,
            "citations": [evidence[n - 1] for n in state.cited],
            "evidence": evidence,
            "timings_ms": state.timings_ms,
        }
        return Response(AnswerOutputSerializer(result).data)


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
