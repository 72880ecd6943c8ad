"""One place that turns domain errors into HTTP answers."""

from django.core.exceptions import RequestDataTooBig
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler


class CairnError(Exception):
    """A request Cairn cannot carry out, blamed on one input field."""

    def __init__(self, field: str, message: str, *, status_code: int = status.HTTP_400_BAD_REQUEST):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.status_code = status_code


def api_exception_handler(exc, context):
    if isinstance(exc, CairnError):
        return Response({exc.field: [exc.message]}, status=exc.status_code)
    if isinstance(exc, RequestDataTooBig):
        return Response(
            {"detail": "Request body exceeds the upload limit (CAIRN_MAX_UPLOAD_BYTES)."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, ValidationError) and not isinstance(exc.detail, dict):
        exc = ValidationError({"non_field_errors": exc.detail})
    return exception_handler(exc, context)
