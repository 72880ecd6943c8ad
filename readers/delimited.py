"""Delimited tables (CSV, TSV) as block text: one table under its header row, in row groups placed
as a spreadsheet program numbers a CSV's records (readers.office.sheet_blocks reads it as a sheet)."""

from __future__ import annotations

import csv
import io

from readers.blocks import joined_blocks
from readers.office import sheet_blocks
from readers.reading import ReadError, Reading


def read_delimited(raw: str, *, delimiter: str, name: str = "") -> Reading:
    """A CSV or TSV file's text (already decoded) as one table under its header row (header_row),
    in row groups placed as the rows of a sheet called by the file's `name`: a spreadsheet program
    numbers a CSV's records as rows."""
    what = "TSV" if delimiter == "\t" else "CSV"
    try:
        rows = list(enumerate(csv.reader(io.StringIO(raw, newline=""), delimiter=delimiter), start=1))
    except csv.Error as exc:
        raise ReadError(f"cannot read {what}: {exc}") from exc
    return Reading(joined_blocks(sheet_blocks(name, rows, section=False)), located=True)
