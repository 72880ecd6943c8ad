"""How API callers present their token."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    """A Cairn token sent as `Authorization: Bearer <key>`: what OpenAI's clients, chat front-ends
    and MCP clients send with an API key. The same tokens as `Token <key>`."""

    keyword = "Bearer"


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """The schema names it apart from `Token <key>` (drf-spectacular would give both one name)."""

    target_class = BearerTokenAuthentication
    name = "bearerAuth"
    priority = 1  # before drf-spectacular's own scheme for TokenAuthentication and its subclasses

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A Cairn token: `Authorization: Bearer <key>`."}
