"""What a reader makes of one file: the shared shape every format's reader returns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Reading:
    text: str  # block text (readers.blocks.parse_blocks), location markers included when `located`
    title: str = ""  # the file's own title, when it names one; else its name is used
    # Document properties, as strings: "author", "created", "modified" (ISO 8601), others per format.
    metadata: dict = field(default_factory=dict)
    located: bool = False  # whether the text holds readers.locations markers


class ReadError(Exception):
    """A file its reader cannot read as the document its name claims; the message says why, and
    readers.extract reports it as the file's ExtractionError."""
