"""Input fields stricter than DRF's, for the API's request bodies."""

from rest_framework import serializers


class StrictStringMixin:
    """Refuse what is not a JSON string where DRF's CharField would turn a number or a boolean into
    one: a document whose text is `5` is a client's mistake, not a document."""

    default_error_messages = {"not_a_string": "Must be a string, not {kind}."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            kind = {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object"}
            self.fail("not_a_string", kind=kind.get(type(data), type(data).__name__))
        return super().to_internal_value(data)


class StrictCharField(StrictStringMixin, serializers.CharField):
    pass


class StrictSlugField(StrictStringMixin, serializers.SlugField):
    pass
