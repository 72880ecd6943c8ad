"""How API callers present their token."""

from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    """A Cairn token sent as `Authorization: Bearer <key>`: what OpenAI's clients, chat front-ends
    and MCP clients send with an API key. The same tokens as `Token <key>` (the schema's scheme:
    common/schema.py)."""

    keyword = "Bearer"
