"""What a text file's bytes are, for schemathesis (loaded through SCHEMATHESIS_HOOKS by
tests/test_schema.py): a schema types an uploaded file as bytes of a media type and cannot say
more, so without this every upload it calls valid is random bytes, which Cairn rightly refuses."""

import schemathesis
from hypothesis import strategies as st

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=400)
schemathesis.openapi.media_type("text/plain", TEXT.filter(str.strip).map(str.encode))


# schemathesis 4.32.5's coverage phase builds one multipart body from the custom encodings, filling
# every required part it has no strategy for with "" whatever the part's schema says
# (coverage/_operation.py, _generate_multipart_body_from_custom_strategies), and calls that body
# valid: an upload naming the collection "", which no slug is. The part gets its schema's example.
CUSTOM_ENCODING = "Multipart body with custom encoding"


@schemathesis.hook
def map_case(ctx, case):
    phase = case.meta.phase if case.meta else None
    if getattr(phase.data, "description", None) == CUSTOM_ENCODING and isinstance(case.body, dict):
        body = next((b for b in case.operation.body if b.media_type == case.media_type), None)
        properties = body.form_properties if body is not None else {}
        for name, value in list(case.body.items()):
            if value == "" and "example" in properties.get(name, {}):
                case.body[name] = properties[name]["example"]
    return case
