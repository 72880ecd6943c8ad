"""Where a chunk sits in its original file: a PDF's page, a deck's slide, a workbook's sheet and rows.

A reader that knows where its text came from writes a marker line into the block text before the
blocks it names: ASCII's SUB control character and the location as JSON, ``\x1a{"page": 12}``.
Not a form feed or a record separator: Python counts both as whitespace, and every strip() or
split() on the way would take them off. parse_blocks reads a marker as a location, never as text;
each chunk then records the span of the locations its sentences came from (``{"page": 12, "to":
13}``), and the source card says "pages 12–13" and opens the original there. Text formats cannot
forge one: the character in what a person typed is a line break (corpus.services strips it from
every document whose reader does not write locations).

The location shapes:
    {"page": 12}                            a PDF page (numbered from 1, as a viewer numbers them)
    {"page": 3, "ocr": 0.91}                a scanned page read by OCR, with its mean word confidence (0-1)
    {"slide": 4}                            a presentation's slide
    {"sheet": "Prices", "rows": [2, 41]}    a workbook's sheet and its rows, numbered as the sheet shows them
"""

from __future__ import annotations

import json

MARK = "\x1a"
_NUMBERED = ("page", "slide")


def marker(location: dict) -> str:
    """The line a reader writes before the blocks that sit at `location`."""
    return MARK + json.dumps(location, ensure_ascii=False, separators=(",", ":"))


def page(number: int) -> str:
    return marker({"page": number})


def slide(number: int) -> str:
    return marker({"slide": number})


def sheet(name: str, first_row: int | None = None, last_row: int | None = None) -> str:
    location: dict = {"sheet": name}
    if first_row is not None:
        location["rows"] = [first_row, last_row if last_row is not None else first_row]
    return marker(location)


def parse(line: str) -> dict | None:
    """The location a marker line names, or None when the line is not a marker."""
    if not line.startswith(MARK):
        return None
    try:
        location = json.loads(line[1:])
    except ValueError:
        return None
    return location if _valid(location) else None


def _valid(location) -> bool:
    if not isinstance(location, dict):
        return False
    if "ocr" in location and not _confidence(location.get("page"), location["ocr"]):
        return False
    for kind in _NUMBERED:
        if kind in location:
            return isinstance(location[kind], int) and location[kind] >= 1
    if isinstance(location.get("sheet"), str):
        rows = location.get("rows")
        return rows is None or (
            isinstance(rows, list) and len(rows) == 2 and all(isinstance(r, int) and r >= 1 for r in rows)
        )
    return False


def _confidence(page, value) -> bool:
    """An OCR confidence: a number in [0, 1], on a page only."""
    return page is not None and isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


def span(locations: list[dict]) -> dict:
    """The location of a chunk made of blocks at `locations` (in reading order): the first page or
    slide and, when it runs on, the last (``"to"``), with the lowest OCR confidence of its pages
    (``"ocr"``) when any was read by OCR; a sheet with the rows from the first to the last row of
    that sheet. {} when no block has a location."""
    locations = [loc for loc in locations if loc]
    if not locations:
        return {}
    first = locations[0]
    for kind in _NUMBERED:
        if kind in first:
            last = max((loc[kind] for loc in locations if kind in loc), default=first[kind])
            found = {kind: first[kind], "to": last} if last > first[kind] else {kind: first[kind]}
            if confidences := [loc["ocr"] for loc in locations if "ocr" in loc]:
                found["ocr"] = min(confidences)
            return found
    same = [loc for loc in locations if loc.get("sheet") == first["sheet"]]
    rows = [r for loc in same for r in loc.get("rows") or []]
    return {"sheet": first["sheet"], "rows": [min(rows), max(rows)]} if rows else {"sheet": first["sheet"]}


def label(location: dict) -> str:
    """How a reader is told where it is: "page 12", "pages 12–13", "slide 4", "sheet Prices, rows 2–41"."""
    for kind in _NUMBERED:
        if kind in location:
            start, end = location[kind], location.get("to")
            return f"{kind}s {start}–{end}" if end and end > start else f"{kind} {start}"
    if "sheet" in location:
        rows = location.get("rows")
        if not rows:
            return f"sheet {location['sheet']}"
        where = f"row {rows[0]}" if rows[0] == rows[1] else f"rows {rows[0]}–{rows[1]}"
        return f"sheet {location['sheet']}, {where}"
    return ""


def without_markers(text: str) -> str:
    """The text with its marker lines taken out."""
    return "\n".join(line for line in text.split("\n") if parse(line) is None)


def strip_markers(text: str) -> str:
    """Text whose reader writes no locations: the marker character is only a line break."""
    return text.replace(MARK, "\n")
