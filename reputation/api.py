"""POST /api/v1/feedback: the asker's signals on an answer, bound to it by its response id."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from common.fields import StrictCharField
from common.schema import error
from reputation.models import Feedback
from reputation.services import feedback_submit


class FeedbackOutputSerializer(serializers.ModelSerializer):
    chunks = serializers.SerializerMethodField(help_text="How many chunks' counters moved.")

    class Meta:
        model = Feedback
        fields = ["response_id", "thumbs", "behaviour", "verifier", "judge", "comment", "outcome", "kappa", "chunks",
                  "created_at", "updated_at"]  # fmt: skip

    def get_chunks(self, obj) -> int:
        return len(obj.applied)


class FeedbackApi(APIView):
    throttle_scope = "feedback"

    class FeedbackInputSerializer(serializers.Serializer):
        response_id = serializers.UUIDField()
        thumbs = serializers.IntegerField(min_value=0, max_value=1, required=False, help_text="1 up, 0 down.")
        behaviour = serializers.ChoiceField(choices=Feedback.Behaviour.choices, required=False)
        verifier = serializers.FloatField(
            min_value=0.0,
            max_value=1.0,
            required=False,
            help_text="External ground truth: overrides the rest. Staff and CAIRN_VERIFIER_GROUP only.",
        )
        comment = StrictCharField(required=False, allow_blank=True, max_length=2000, default="")

        # at least one signal (reputation.services.feedback_submit)
        schema_constraints = {
            "anyOf": [{"required": ["thumbs"]}, {"required": ["behaviour"]}, {"required": ["verifier"]}]
        }

    @extend_schema(
        request=FeedbackInputSerializer,
        responses={
            200: FeedbackOutputSerializer,
            403: error("A `verifier` from someone neither staff nor in CAIRN_VERIFIER_GROUP."),
            404: error("No answer with this response id that you asked."),
        },
    )
    def post(self, request):
        data = self.FeedbackInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(FeedbackOutputSerializer(feedback_submit(user=request.user, **data.validated_data)).data)
