"""The API's JSON parser, with a bound on nesting: Python's parser recurses, so a body nested a
thousand deep raised RecursionError (a 500) on every POST endpoint. No Cairn input nests deeper
than a few levels."""

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


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
    def parse(self, stream, media_type=None, parser_context=None):
        too_deep = ParseError(f"JSON parse error - nested deeper than {settings.CAIRN_JSON_MAX_DEPTH} levels.")
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise too_deep from None
        if json_depth(data) > settings.CAIRN_JSON_MAX_DEPTH:
            raise too_deep
        return data
