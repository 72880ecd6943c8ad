"""The API's JSON parser, with bounds on size and nesting. Size: DRF reads the stream itself, past
Django's DATA_UPLOAD_MAX_MEMORY_SIZE, so without a bound any endpoint took a body of any length
into memory. Nesting: Python's parser recurses, so a body nested a thousand deep raised
RecursionError (a 500) on every POST endpoint. No Cairn input nests deeper than a few levels."""

import io

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser


class BodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


def json_depth(value) -> int:
    """Nesting depth of parsed JSON (a scalar is 0), without recursion."""
    depth, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        depth = max(depth, level)
        stack.extend((child, level + 1) for child in children)
    return depth


class DepthLimitedJSONParser(JSONParser):
    """Bodies up to the view's `max_body_bytes` (documents: the upload limit), else
    CAIRN_MAX_REQUEST_BYTES; read no further than one byte past it, whatever Content-Length says."""

    def parse(self, stream, media_type=None, parser_context=None):
        view = (parser_context or {}).get("view")
        own = getattr(view, "max_body_bytes", None)
        limit, setting = (
            (own, "CAIRN_MAX_UPLOAD_BYTES") if own else (settings.CAIRN_MAX_REQUEST_BYTES, "CAIRN_MAX_REQUEST_BYTES")
        )
        body = stream.read(limit + 1)
        if len(body) > limit:
            raise BodyTooLarge(f"The request body is larger than {limit} bytes ({setting}).")
        too_deep = ParseError(f"JSON parse error - nested deeper than {settings.CAIRN_JSON_MAX_DEPTH} levels.")
        try:
            data = super().parse(io.BytesIO(body), media_type, parser_context)
        except RecursionError:
            raise too_deep from None
        if json_depth(data) > settings.CAIRN_JSON_MAX_DEPTH:
            raise too_deep
        return data
