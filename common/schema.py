"""The OpenAPI schema's general rules (DEFAULT_SCHEMA_CLASS), so that it says what the server does
without each view repeating it:

- every operation lists the errors the framework itself answers: 401 where credentials are read,
  403 where a permission stands, 429 where a rate applies, 400 / 413 / 415 for a body or query
  parameters, 404 for path parameters, pages and `format`; each with the `Error` body, in every
  media type the view renders (an event stream gets one `error` event);
- request fields are typed as they are checked: a CharField refuses blank (after trimming) and NUL
  characters, a ListField that allows no empty list says so, and a serializer's `schema_constraints`
  (rules across fields: "one of", "not with") join its request schema;
- request bodies are documented as JSON, which every API client sends. The form parsers stay for
  the browsable API and the tests' clients; a form cannot say null or nest, so it is no contract.
  A view that takes a file documents its multipart body itself.

A view documents with extend_schema only what is its own: its success bodies and the errors its
service answers (`error(...)`: a 404 for an unknown collection named in the body, a 409 for a state
conflict)."""

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.settings import api_settings

ERROR_SCHEMA = {
    "type": "object",
    "description": "Why the request was refused: `detail` for the request as a whole, or per field at fault a "
    "list of messages (an object of them for a list's items or a nested object's fields).",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": {"anyOf": [{"type": "array", "items": {}}, {"type": "object"}]},
}
ERROR_REF = {"$ref": "#/components/schemas/Error"}

# Python's \s (what str.strip() removes before DRF checks for blank) and DRF's refusal of NUL.
NOT_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"
NO_NUL = r"^[^\x00]*$"

# What the framework answers, whatever the view.
FRAMEWORK_ERRORS = {
    400: "The body or a query parameter is not what this operation takes (malformed JSON included).",
    401: "No valid credentials: send `Authorization: Token <key>` (or a signed-in session).",
    403: "Signed in, but not allowed this (a curator's operation, or a session request without its CSRF token).",
    404: "Not found: nothing at this path for you, no such page, or an unknown `format`.",
    413: "The body is larger than the server reads (CAIRN_MAX_REQUEST_BYTES; uploads CAIRN_MAX_UPLOAD_BYTES).",
    415: "The body's Content-Type is not one the operation reads.",
    429: "Too many requests for this rate (CAIRN_THROTTLE_*): Retry-After says when to try again.",
}
EVENT_STREAM_ERROR = "One `error` event whose data is the Error body as JSON."


CONSTRAINTS = "x-cairn-constraints"


def constraints_join(result, generator, request, public):
    """Postprocessing hook, after drf-spectacular's enum hook, which would otherwise take the enums of
    a constraint's branches for the fields' own (and give two branches one name)."""
    for schema in result.get("components", {}).get("schemas", {}).values():
        schema.update(schema.pop(CONSTRAINTS, {}))
    return result


def error(description: str) -> OpenApiResponse:
    """A view's own error answer: the Error body, described."""
    return OpenApiResponse(ERROR_REF, description=description)


class CairnAutoSchema(AutoSchema):
    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        self.registry.register_on_missing(
            ResolvedComponent(name="Error", type=ResolvedComponent.SCHEMA, object="Error", schema=ERROR_SCHEMA)
        )
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query" and not parameter.get("required"):
                # DRF reads `?name=` as no value at all (the field's default)
                parameter["schema"] = {"oneOf": [parameter["schema"], {"type": "string", "maxLength": 0}]}
        responses = operation["responses"]
        for code in self._framework_errors(operation):
            responses.setdefault(str(code), {"description": FRAMEWORK_ERRORS[code]})
        for code, response in responses.items():
            if code >= "400":  # a view's own examples stay; the body and media types are the rule's
                examples = response.get("content", {}).get("application/json", {}).get("examples")
                response["content"] = self._error_content()
                if examples and "application/json" in response["content"]:
                    response["content"]["application/json"]["examples"] = examples
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _framework_errors(self, operation) -> set[int]:
        view, codes = self.view, set()
        query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        body = "requestBody" in operation
        if body or query - {"page", "format"}:
            codes.add(400)
        if body:
            codes |= {413, 415}
        if view.get_authenticators():
            codes.add(401)  # a wrong token is refused even where no permission is needed
        if not all(isinstance(p, AllowAny) for p in view.get_permissions()):
            codes.add(403)
        if any(p["in"] == "path" for p in operation.get("parameters", [])) or query & {"page", "format"}:
            codes.add(404)
        if view.get_throttles() and self._rate_applies():
            codes.add(429)
        return codes

    def _rate_applies(self) -> bool:
        # accounts.throttling.ScopedRateThrottle: a signed-in caller by the view's scope, an anonymous
        # one (who gets that far only where the view allows anyone) by `anon`.
        rates = api_settings.DEFAULT_THROTTLE_RATES
        scope = getattr(self.view, "throttle_scope", None)
        admits_anyone = all(isinstance(p, AllowAny) for p in self.view.get_permissions())
        return bool(scope and rates.get(scope)) or (admits_anyone and bool(rates.get("anon")))

    def _error_content(self) -> dict:
        stream = {
            "type": "object",
            "description": EVENT_STREAM_ERROR,
            "properties": {"event": {"type": "string", "enum": ["error"]}, "data": {"type": "string"}},
            "required": ["event", "data"],
        }
        return {
            media_type: {"schema": dict(ERROR_REF) if "json" in media_type else stream}
            for media_type in self.map_renderers("media_type")
        }

    def map_parsers(self):
        parsers = super().map_parsers()
        return [m for m in parsers if m == "application/json"] or parsers

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        constraints = getattr(serializer, "schema_constraints", None)
        if constraints and direction == "request":
            schema[CONSTRAINTS] = constraints  # joined after the enum hook (constraints_join)
        return schema

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction != "request" or field.read_only:
            return schema
        checked = any(isinstance(v, RegexValidator) for v in field.validators)  # a pattern of its own
        if isinstance(field, serializers.CharField) and not checked and "format" not in schema:
            if field.allow_blank:
                schema["pattern"] = NO_NUL
            elif field.trim_whitespace:
                schema["pattern"] = NOT_BLANK
            else:
                schema["pattern"] = NO_NUL
                schema.setdefault("minLength", 1)
        if isinstance(field, serializers.FileField):
            # A file's bytes, not (as a response has it) a URL; an example of its own stays.
            schema = {
                "type": "string",
                "format": "binary",
                **({"example": schema["example"]} if "example" in schema else {}),
            }
            if not field.allow_empty_file:
                schema["minLength"] = 1
        if isinstance(field, serializers.ListField) and not field.allow_empty:
            schema.setdefault("minItems", 1)
        return schema


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """The same token as `Authorization: Bearer <key>` (how OpenAI and MCP clients send a key): its own
    scheme, where it would otherwise share the name tokenAuth with `Token <key>`."""

    target_class = "accounts.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer"}
