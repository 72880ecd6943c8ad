"""A local folder or a mounted share. An item's version is its size and modification time; when
they change and its bytes hash the same, nothing is ingested again (sources/services.py)."""

from __future__ import annotations

import os
from pathlib import Path

from sources.connectors.base import ConnectorError, Fetched, Item, Known, Listing, reader_name


class FolderConnector:
    def __init__(self, source) -> None:
        self.root = Path(source.location)

    def list(self, known: dict[str, Known]) -> Listing:
        if not self.root.is_dir():
            raise ConnectorError(f"{self.root} is not a folder (unmounted, moved or deleted?)")
        try:
            os.listdir(self.root)
        except OSError as exc:
            raise ConnectorError(f"cannot read {self.root}: {exc.strerror or exc}") from exc
        items, problems = [], []

        def unreadable(error: OSError) -> None:  # a subfolder that cannot be read: the listing has a hole
            problems.append(f"cannot read {error.filename}: {error.strerror or error}")

        for directory, folders, files in os.walk(self.root, onerror=unreadable):
            folders[:] = sorted(f for f in folders if not f.startswith("."))
            for filename in sorted(files):
                if filename.startswith("."):
                    continue
                path = Path(directory, filename)
                key = path.relative_to(self.root).as_posix()
                if (name := reader_name(key)) is None:
                    continue
                try:
                    stat = path.stat()
                except OSError as exc:
                    problems.append(f"cannot read {key}: {exc.strerror or exc}")
                    continue
                items.append(Item(key=key, version=f"{stat.st_size}-{stat.st_mtime_ns}", name=name, uri=str(path)))
        return Listing(items=items, complete=not problems, problems=problems)

    def fetch(self, item: Item, known: Known | None) -> Fetched:
        try:
            return Fetched((self.root / item.key).read_bytes())
        except OSError as exc:
            raise ConnectorError(f"cannot read {item.key}: {exc.strerror or exc}") from exc
