"""Server-sent events (text/event-stream): how a streamed answer travels.

Each event is `event: NAME` and one `data:` line of JSON (the same encoder as the JSON API), so a
client reads a stream with nothing but a line splitter and JSON.parse. Errors answered before a
stream starts (a 400 for a bad field) reach a client that accepts only event streams as one
`error` event with the same body and status.
"""

import json

from rest_framework.renderers import BaseRenderer
from rest_framework.utils.encoders import JSONEncoder

MEDIA_TYPE = "text/event-stream"


def sse(event: str, data) -> bytes:
    # One line: JSON escapes newlines inside strings, and a bare newline would end the data field.
    return f"event: {event}\ndata: {json.dumps(data, cls=JSONEncoder, ensure_ascii=False)}\n\n".encode()


class EventStreamRenderer(BaseRenderer):
    """Lets `Accept: text/event-stream` through content negotiation; renders a plain (error) body
    as one `error` event. A streamed answer itself is a StreamingHttpResponse, not rendered here."""

    media_type = MEDIA_TYPE
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return sse("error", data) if data is not None else b""


STREAM_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # nginx passes each event on at once instead of buffering the response
}
