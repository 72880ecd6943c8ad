"""What a text file's bytes are, for schemathesis (loaded through SCHEMATHESIS_HOOKS by
tests/test_schema.py): a schema types an uploaded file as bytes of a media type and cannot say
more, so without this every upload it calls valid is random bytes, which Cairn rightly refuses."""

import schemathesis
from hypothesis import strategies as st

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=400)
schemathesis.openapi.media_type("text/plain", TEXT.filter(str.strip).map(str.encode))
