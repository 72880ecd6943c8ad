"""Start-up checks for sources (Django's system checks: `manage.py check`, every command's start)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.checks import Error, Warning, register

from sources.places import cairn_places


@register()
def folder_roots_check(app_configs=None, **kwargs):
    """A root of CAIRN_SOURCES_FOLDER_ROOTS inside Cairn's own files is an error (what curators
    would add there is Cairn's data); one around them a warning (a source there that holds them is
    refused, but the layout invites the attempt)."""
    found = []
    places = cairn_places()
    for root in map(Path, settings.CAIRN_SOURCES_FOLDER_ROOTS):
        for name, place in places.items():
            if root == place or place in root.parents:
                found.append(Error(
                    f"CAIRN_SOURCES_FOLDER_ROOTS holds {root}, which lies in Cairn's own files ({name}: {place})",
                    hint="Give curators' shares a folder of their own, outside CAIRN_DATA_DIR, the originals and "
                    "CAIRN_SOURCES_DIR.", id="sources.E001",
                ))  # fmt: skip
                break
            if root in place.parents:
                found.append(Warning(
                    f"CAIRN_SOURCES_FOLDER_ROOTS holds {root}, which holds Cairn's own files ({name}: {place})",
                    hint="A source that holds them is refused; a root beside them is simpler to reason about.",
                    id="sources.W001",
                ))  # fmt: skip
                break
    return found
