"""Errors raised outside a DRF view (no route, a malformed id in the path, a body too large, an
unhandled exception): under /api/ they answer JSON in the shape DRF gives its own errors,
{"detail": "..."}; elsewhere Django's pages. Nothing internal (paths, SQL, tracebacks) is shown."""

from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.views import defaults


def is_api(request) -> bool:
    return request.path.startswith("/api/")


def bad_request(request, exception=None):
    if not is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse({"detail": "Request body exceeds the upload limit (CAIRN_MAX_UPLOAD_BYTES)."}, status=413)
    return JsonResponse({"detail": "Bad request."}, status=400)


def permission_denied(request, exception=None):
    if not is_api(request):
        return defaults.permission_denied(request, exception)
    return JsonResponse({"detail": "You do not have permission to perform this action."}, status=403)


def not_found(request, exception=None):
    if not is_api(request):
        return defaults.page_not_found(request, exception)
    return JsonResponse({"detail": f"No such resource: {request.path}"}, status=404)


def server_error(request):
    if not is_api(request):
        return defaults.server_error(request)
    return JsonResponse({"detail": "Internal error: the server logged it; please try again later."}, status=500)
