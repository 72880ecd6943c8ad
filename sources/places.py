"""Cairn's own files on this host (its data folder, the originals it keeps, the sources' copies):
places no folder or local git source may read, whoever set it up and however the roots are drawn.
A source inside one would read other collections' originals or copies; one around one, all of it."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings


def cairn_places() -> list[Path]:
    """The folders that hold Cairn's own files (the originals only when they are on this disk)."""
    places = [Path(settings.CAIRN_DATA_DIR), Path(settings.CAIRN_SOURCES_DIR)]
    originals = settings.STORAGES.get("originals", {})
    if originals.get("BACKEND", "").endswith("FileSystemStorage") and (
        where := originals.get("OPTIONS", {}).get("location")
    ):
        places.append(Path(where))
    return [Path(os.path.realpath(place)) for place in places]


def cairn_place_overlapping(path: Path) -> Path | None:
    """The place of Cairn's own that `path` (a real, absolute path) lies in or holds, else None."""
    for place in cairn_places():
        if path == place or place in path.parents or path in place.parents:
            return place
    return None
