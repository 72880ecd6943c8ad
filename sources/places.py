"""Cairn's own files on this host (its data folder, the originals it keeps, the sources' copies):
places no folder or local git source may read, whoever set it up and however the roots are drawn.
A source inside one would read other collections' originals or copies; one around one, all of it."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings


def cairn_places() -> dict[str, Path]:
    """The folders that hold Cairn's own files, each by what names it, the narrowest first (the
    sources' copies and the originals lie in the data folder by default). The originals only when
    they are on this disk."""
    places = {"CAIRN_SOURCES_DIR": Path(settings.CAIRN_SOURCES_DIR)}
    originals = settings.STORAGES.get("originals", {})
    if originals.get("BACKEND", "").endswith("FileSystemStorage") and (
        where := originals.get("OPTIONS", {}).get("location")
    ):
        places["the originals' storage"] = Path(where)
    places["CAIRN_DATA_DIR"] = Path(settings.CAIRN_DATA_DIR)
    return {name: Path(os.path.realpath(place)) for name, place in places.items()}


def cairn_place_overlapping(path: Path) -> str | None:
    """The place of Cairn's own that `path` (a real, absolute path) lies in or holds, as "NAME: PATH";
    None when it touches none."""
    for name, place in cairn_places().items():
        if path == place or place in path.parents or path in place.parents:
            return f"{name}: {place}"
    return None
