"""REST endpoints for asking questions, reading and marking recorded answers, and health (the
write-back review is writeback's: writeback/api.py)."""

import logging
from collections.abc import Iterator

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from common.fields import StrictCharField
from common.postgres.base import installed_vector_version
from common.schema import ERROR_REF, NOT_BLANK, error
from common.sse import MEDIA_TYPE as EVENT_STREAM
from common.sse import STREAM_HEADERS, EventStreamRenderer, sse
from corpus.embedder import embedder_loaded
from corpus.originals import place
from judges.verifiers import verifiers_loaded
from pipeline.models import Answer, Conversation, Evidence
from pipeline.selectors import answer_get, conversation_get, conversations_of
from pipeline.services import NO_CONVERSATION, answer_mark, conversation_delete, query_state
from pipeline.stages import QueryState, pipeline_events, pipeline_run
from writeback.models import Mark

log = logging.getLogger(__name__)


class StripSerializer(serializers.Serializer):
    text = serializers.CharField()
    relevance = serializers.FloatField()
    kept = serializers.BooleanField(help_text="Kept by knowledge refinement: what the generator saw.")


LOCATION_HELP = 'Where the passage sits in its original file: {"page": 12}, {"slide": 4}, {"sheet": …, "rows": […]}.'
LABEL_HELP = 'The location in words: "page 12", "pages 12–13", "slide 4", "sheet Prices, rows 2–41"; "" when none.'
ORIGINAL_HELP = "The original file opened at that place (a PDF at #page=N); null when no file is kept."


class EvidenceSerializer(serializers.ModelSerializer):
    chunk_id = serializers.IntegerField(allow_null=True, help_text="Empty for external and inferred evidence.")
    document_id = serializers.IntegerField(source="chunk.document_id", allow_null=True, default=None)
    collection = serializers.CharField(source="chunk.document.collection.name", allow_null=True, default=None)
    document_added = serializers.DateTimeField(source="chunk.document.created_at", allow_null=True, default=None)
    uploaded_by = serializers.CharField(source="chunk.document.upload.uploader.username", allow_null=True, default=None)
    strips = StripSerializer(many=True)
    notes = serializers.ListField(child=serializers.CharField())
    location = serializers.SerializerMethodField(help_text=LOCATION_HELP)
    location_label = serializers.SerializerMethodField(help_text=LABEL_HELP)
    original_url = serializers.SerializerMethodField(help_text=ORIGINAL_HELP)

    class Meta:
        model = Evidence
        fields = [
            "n", "origin", "chunk_id", "document_id", "collection", "document_added", "uploaded_by", "title",
            "source", "text", "bucket", "trust", "relevance", "consistency", "agreement", "strips", "notes", "cited",
            "vector_distance", "text_rank", "fused_score", "rank_score", "reputation", "reputation_weight",
            "location", "location_label", "original_url",
        ]  # fmt: skip

    def get_location(self, evidence) -> dict:
        return place(evidence.chunk)["location"]

    def get_location_label(self, evidence) -> str:
        return place(evidence.chunk)["location_label"]

    def get_original_url(self, evidence) -> str | None:
        return place(evidence.chunk)["original_url"]


class CitationSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="The [n] in the answer; also the evidence item's n.")
    chunk_id = serializers.IntegerField(allow_null=True)
    origin = serializers.CharField()
    strips = serializers.ListField(child=serializers.CharField(), help_text="The refined strips the answer drew on.")
    location = serializers.DictField(help_text=LOCATION_HELP)
    location_label = serializers.CharField(help_text=LABEL_HELP)
    original_url = serializers.CharField(allow_null=True, help_text=ORIGINAL_HELP)


class MarkSerializer(serializers.ModelSerializer):
    n = serializers.IntegerField(
        source="evidence_n", allow_null=True, help_text="The evidence number of the passage marked; null for none."
    )
    none = serializers.BooleanField(source="none_answers", help_text="True: none of the sources answers it.")

    class Meta:
        model = Mark
        fields = ["response_id", "n", "sentence", "none", "updated_at"]


class AnswerSerializer(serializers.ModelSerializer):
    question = serializers.CharField(help_text="The question answered: a follow-up as its standalone question.")
    asked = serializers.CharField(help_text="The question as typed, when it was rewritten as a follow-up; else empty.")
    rewritten_by = serializers.ChoiceField(
        choices=["", "rules", "llm"], help_text="What made the follow-up standalone; empty when it stood alone."
    )
    conversation_id = serializers.UUIDField(
        source="conversation.conversation_id", allow_null=True, default=None,
        help_text="The conversation it was asked in: send it with the next question to follow on from it.",
    )  # fmt: skip
    answer = serializers.CharField(
        source="shown_text", help_text="Withheld, with its sentences and warnings, once its asker can no longer "
        "read a collection it drew on; the evidence and citations they may still read are shown.",
    )  # fmt: skip
    found = serializers.BooleanField(help_text="True for the answered outcome only (as before `outcome` existed).")
    outcome = serializers.ChoiceField(
        choices=Answer.Outcome.choices,
        help_text="answered: a stated answer Cairn is confident in; where_to_look: no claim, the passages that "
        "look closest, each with its best sentence, cited (a dispute, 'Sources disagree', too); not_found: no "
        "verified evidence.",
    )
    confidence = serializers.FloatField(
        allow_null=True,
        help_text="The calibrated probability (0-1) that the stated answer holds what was asked; null when "
        "nothing was judged (not_found, an LLM's answer, which the output gate checks instead, or an answer "
        "recorded before Cairn measured it).",
    )
    citations = CitationSerializer(many=True, source="citations_placed")
    evidence = EvidenceSerializer(many=True, source="evidence_shown")
    external = serializers.DictField(help_text="provider, query, results (count), error; empty when none ran.")
    notes = serializers.ListField(child=serializers.CharField())
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="Critiques of rejected answers to similar questions, given to the generator.",
    )
    timings_ms = serializers.DictField(child=serializers.FloatField())
    sentences = serializers.ListField(
        child=serializers.DictField(),
        help_text="An LLM's sentences as the output gate judged them (sentence, claim, cited, entailment, "
        "scores by evidence number, verdict shown/unsupported, shown_cited); empty for extractive answers.",
    )
    mark = serializers.SerializerMethodField(
        help_text="The asker's mark on it (POST .../mark): the sentence that answers it, or none; null when "
        "none was given. Shown to whoever may read the answer: its asker, and the curators of it."
    )

    class Meta:
        model = Answer
        fields = [
            "response_id", "question", "asked", "rewritten_by", "conversation_id", "answer", "found", "outcome", "confidence", "mode", "action", "generator",
            "citations", "evidence", "external", "iterations", "agreement", "notes", "sentences", "warnings",
            "timings_ms", "mark", "created_at",
        ]  # fmt: skip

    @extend_schema_field(MarkSerializer(allow_null=True))
    def get_mark(self, answer) -> dict | None:
        mark = Mark.objects.filter(response_id=answer.response_id).first()
        if mark is None or mark.evidence_n in answer.withheld_evidence:
            return None
        return MarkSerializer(mark).data

    def to_representation(self, answer):
        data = super().to_representation(answer)
        if answer.withheld:  # what it said came from a collection its reader can no longer read
            data.update(sentences=[], warnings=[])
        return data


EVENTS = """With `stream: true` or `Accept: text/event-stream`: server-sent events, each `event: NAME` and one
`data:` line of JSON.

- `stage`: a stage finished: `{"stage": NAME, ...}` with what it found and its `ms` (the first, at once, is
  `{"stage": "asked"}`);
- `text`: a piece of the answer as it is written: `{"text": ...}`; `{"restart": true}` voids what came before
  (a generator that failed part-way);
- `answer`: the recorded answer, the very body of a plain request (Answer), and the stream ends;
- `error`: `{"detail": ...}`: answering failed part-way, and the stream ends."""


class QueryApi(APIView):
    """Ask a question. With `stream` (or `Accept: text/event-stream`) the answer comes as server-sent
    events: `stage` as each stage finishes (what it found, its milliseconds), `text` as the answer
    is written (Ollama's tokens, the extractive answer's sentences; `restart` voids what came before
    when a generator fails part-way), then `answer` with the recorded response, the very body of a
    plain request; `error` if it fails part-way."""

    throttle_scope = "query"  # each question costs seconds of CPU
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, EventStreamRenderer]

    class QueryInputSerializer(serializers.Serializer):
        question = StrictCharField(max_length=2000)
        top_k = serializers.IntegerField(min_value=1, max_value=50, default=8)
        collections = serializers.ListField(
            child=serializers.SlugField(), required=False, allow_empty=False, max_length=100
        )
        mode = serializers.ChoiceField(choices=Answer.Mode.choices, default=Answer.Mode.STANDARD)
        generator = serializers.ChoiceField(choices=["extractive", "ollama", "openai"], required=False)
        stream = serializers.BooleanField(default=False, help_text="Server-sent events (as Accept: text/event-stream).")
        conversation_id = serializers.UUIDField(
            required=False, allow_null=True,
            help_text="Follow on from this conversation of yours (the answer's conversation_id); none starts one.",
        )  # fmt: skip

        # fast and deep fix their generator (pipeline.services.query_state)
        schema_constraints = {
            "not": {"required": ["mode", "generator"], "properties": {"mode": {"enum": ["fast", "deep"]}}}
        }

    @extend_schema(
        request=QueryInputSerializer,
        responses={
            (200, "application/json"): OpenApiResponse(
                AnswerSerializer, description="The answer, or with `stream` its events (text/event-stream)."
            ),
            (200, EVENT_STREAM): {
                "type": "object",
                "description": EVENTS,
                "properties": {
                    "event": {"type": "string", "enum": ["stage", "text", "answer", "error"]},
                    "data": {"type": "string", "description": "JSON"},
                },
                "required": ["event", "data"],
            },
            403: error("Not allowed: a `generator` on a server that does not let a query choose it."),
            404: error(
                "A collection in `collections` that you may not read, or none by that name; a `conversation_id` "
                "that is not one of yours."
            ),
        },
    )
    def post(self, request):
        data = self.QueryInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        stream = data.validated_data.pop("stream") or request.accepted_renderer.media_type == EVENT_STREAM
        state = query_state(user=request.user, **data.validated_data)  # refusals are a 400 before any event
        if stream:
            return StreamingHttpResponse(answer_events(state), content_type=EVENT_STREAM, headers=STREAM_HEADERS)
        pipeline_run(state)
        return Response(recorded_answer(state))


def recorded_answer(state: QueryState) -> dict:
    return AnswerSerializer(answer_get(user=state.user, response_id=state.record.response_id)).data


def answer_events(state: QueryState) -> Iterator[bytes]:
    yield sse("stage", {"stage": "asked"})  # at once: the reader sees the question was taken
    try:
        for progress in pipeline_events(state):
            yield sse(progress.kind, progress.data)
        yield sse("answer", recorded_answer(state))
    except Exception:  # noqa: BLE001 - the status line has gone out: the stream itself must say it failed
        log.exception("a streamed answer failed: %r", state.question[:200])
        yield sse("error", {"detail": "Answering failed on the server (it is logged). Please ask again."})


class AnswerDetailApi(APIView):
    @extend_schema(responses=AnswerSerializer)
    def get(self, request, response_id):
        answer = answer_get(user=request.user, response_id=response_id)
        if answer is None:
            raise NotFound("no answer with this response id for you")
        return Response(AnswerSerializer(answer).data)


ERRORS = OpenApiResponse(
    ERROR_REF,
    description="The field at fault and why: n, sentence or none (a 400 from the body's shape).",
    examples=[OpenApiExample("not in that passage", value={"sentence": ["passage [2] of this answer showed no such sentence"]})],
)  # fmt: skip
NOT_YOURS = OpenApiResponse(
    ERROR_REF,
    description="No answer with this id that you asked (a curator of it too: only its asker marks it), or no "
    "passage `n` in it, or no such sentence in that passage.",
    examples=[OpenApiExample("not yours", value={"response_id": ["no answer with this response id for you"]})],
)


class AnswerMarkApi(APIView):
    """The asker marks where the answer was: a sentence of one of the answer's passages (`n`, as its
    card showed it), or `none: true`, none of its sources answers it. A second mark replaces the
    first. It changes no answer and no reputation: it waits on the curators' list."""

    throttle_scope = "feedback"

    class MarkInputSerializer(serializers.Serializer):
        n = serializers.IntegerField(
            min_value=1, max_value=10_000, required=False, allow_null=True,
            help_text="The evidence number of the passage.",
        )  # fmt: skip
        sentence = StrictCharField(
            required=False, allow_blank=True, allow_null=True, max_length=10_000,
            help_text="One of that passage's sentences (its evidence strips), whitespace aside.",
        )  # fmt: skip
        none = serializers.BooleanField(
            required=False, default=False, help_text="None of the sources answers it: send without n and sentence."
        )

        # none: true names nothing; otherwise a passage and one of its sentences (pipeline.services.answer_mark)
        schema_constraints = {
            "oneOf": [
                {"required": ["none"], "properties": {"none": {"enum": [True]}, "n": {"enum": [None]},
                                                      "sentence": {"enum": [None, ""]}}},
                {"required": ["n", "sentence"], "properties": {"none": {"enum": [False]}, "n": {"type": "integer"},
                                                               "sentence": {"type": "string", "pattern": NOT_BLANK}}},
            ]
        }  # fmt: skip

    @extend_schema(
        request=MarkInputSerializer,
        responses={
            200: MarkSerializer, 400: ERRORS, 404: NOT_YOURS,
            409: error("Passage `n` has changed since this answer (re-ingested, retracted or no longer yours)."),
        },
    )  # fmt: skip
    def post(self, request, response_id):
        data = self.MarkInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        mark = answer_mark(
            user=request.user, response_id=response_id, n=data.validated_data.get("n"),
            sentence=data.validated_data.get("sentence") or "", none=data.validated_data["none"],
        )  # fmt: skip
        return Response(MarkSerializer(mark).data)


class TurnSerializer(serializers.ModelSerializer):
    answer = serializers.CharField(source="shown_text")

    class Meta:
        model = Answer
        fields = ["response_id", "asked", "question", "rewritten_by", "answer", "outcome", "created_at"]


class ConversationSerializer(serializers.ModelSerializer):
    turns = serializers.IntegerField(source="turn_count", help_text="How many questions were asked in it.")

    class Meta:
        model = Conversation
        fields = ["conversation_id", "title", "turns", "created_at", "updated_at"]


class ConversationDetailSerializer(ConversationSerializer):
    turns = TurnSerializer(many=True, help_text="Its questions and answers, oldest first.")


class ConversationListApi(ListAPIView):
    """Your conversations, the one asked in last first. Each answer of /api/v1/query belongs to one
    (its conversation_id); a question sent with it follows on from the turns before."""

    serializer_class = ConversationSerializer

    def get_queryset(self):
        return conversations_of(user=self.request.user)


class ConversationDetailApi(APIView):
    """One of your conversations with its turns; DELETE deletes it and its turns (answers and their
    evidence). Anyone else's is not found."""

    @extend_schema(responses=ConversationDetailSerializer)
    def get(self, request, conversation_id):
        conversation = conversation_get(user=request.user, conversation_id=conversation_id)
        if conversation is None:
            raise NotFound(NO_CONVERSATION)
        return Response(ConversationDetailSerializer(conversation).data)

    @extend_schema(responses={204: None})
    def delete(self, request, conversation_id):
        conversation_delete(user=request.user, conversation_id=conversation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class HealthOutputSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "unavailable"])
    database = serializers.ChoiceField(choices=["up", "down"])
    vector_extension = serializers.ChoiceField(choices=["up", "down"])
    embedder = serializers.ChoiceField(choices=["up", "loading"], help_text="Loaded in this process, or not yet.")
    details = serializers.DictField(required=False, help_text="Staff only: versions and the database error.")


def database_state() -> tuple[str | None, str | None]:
    """(pgvector's installed version or None, the database's error or None): health and readiness
    report any database failure, never raise it."""
    try:
        return installed_vector_version(), None
    except Exception as exc:  # noqa: BLE001 - any failure is the database's state, not a 500
        return None, str(exc)


class ReadyOutputSerializer(serializers.Serializer):
    ready = serializers.BooleanField()
    waiting_for = serializers.ListField(
        child=serializers.ChoiceField(choices=["database", "embedder", "verifiers"]),
        help_text="What is not up yet: the database (or its vector extension), the embedder, the judges.",
    )


class ReadyApi(APIView):
    """Readiness, for a load balancer or an orchestrator: 200 once this process can answer at full
    speed (the database up and the models loaded), 503 until then. A web process loads the models
    in the background after it starts (CAIRN_WARM_MODELS); a question asked before that waits for
    them, about five times as long as the next. Health (/api/v1/health) says whether it is alive."""

    permission_classes = [AllowAny]
    throttle_classes = []

    @extend_schema(responses={200: ReadyOutputSerializer, 503: ReadyOutputSerializer})
    def get(self, request):
        vector, error = database_state()
        waiting = ["database"] if error or vector is None else []
        if not embedder_loaded():
            waiting.append("embedder")
        if not verifiers_loaded():
            waiting.append("verifiers")
        body = {"ready": not waiting, "waiting_for": waiting}
        return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE if waiting else status.HTTP_200_OK)


class HealthApi(APIView):
    """Up or down per component for anyone (a load balancer's probe); staff also get details.
    Never throttled, and never says more than up/down to a caller it does not know."""

    permission_classes = [AllowAny]
    throttle_classes = []

    @extend_schema(responses={200: HealthOutputSerializer, 503: HealthOutputSerializer})
    def get(self, request):
        vector, error = database_state()
        healthy = error is None and vector is not None
        body = {
            "status": "ok" if healthy else "unavailable",
            "database": "down" if error else "up",
            "vector_extension": "up" if vector else "down",
            "embedder": "up" if embedder_loaded() else "loading",
        }
        if request.user.is_staff:
            body["details"] = {"vector_version": vector, "database_error": error}
        return Response(body, status=status.HTTP_200_OK if healthy else status.HTTP_503_SERVICE_UNAVAILABLE)
