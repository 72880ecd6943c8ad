"""A local folder or a mounted share. An item's version is its size and modification time; when
they change and its bytes hash the same, nothing is ingested again (sources/services.py).

Nothing outside the folder is read, whatever is done to it after the source was saved: its
location must be its real path (no symlink in it), and every sync opens it from / one component
at a time without following a symlink, so a folder swapped for a symlink fails the sync. Below
it, every folder and file is opened the same way from the one above (a file swapped for a symlink
between listing and reading is refused), and only regular files on the folder's own filesystem
are items: symlinks, pipes, devices and mount points are not part of the source. A file with more
than one name (a hard link, perhaps to a file outside) and a file larger than
CAIRN_SOURCES_MAX_BYTES are items that fail, read no further."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from django.conf import settings

from sources.connectors.base import ConnectorError, Fetched, Item, Known, Listing, reader_name
from sources.connectors.nofollow import FILE, FOLDER, open_in
from sources.places import cairn_place_overlapping


def _why(what: str | Path, exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # O_NOFOLLOW met a symlink (or a file where a folder was)
        return f"cannot read {what}: a symlink (never followed) or not a folder on its way"
    return f"cannot read {what}: {exc.strerror or exc}"


class FolderConnector:
    def __init__(self, source) -> None:
        self.root = Path(source.location)
        self.max_bytes = settings.CAIRN_SOURCES_MAX_BYTES

    def _open_root(self) -> int:
        if not self.root.is_absolute() or ".." in self.root.parts:
            raise ConnectorError(f"{self.root} is not an absolute path")
        if place := cairn_place_overlapping(self.root):
            raise ConnectorError(f"{self.root}: a source reads none of Cairn's own files ({place})")
        top = os.open("/", FOLDER)
        try:
            return open_in(top, self.root.parts[1:], FOLDER)
        except OSError as exc:
            if any(Path(*self.root.parts[: n + 1]).is_symlink() for n in range(len(self.root.parts))):
                raise ConnectorError(
                    f"{self.root} is not a folder of its own: a symlink is on its way, and a source reads only "
                    "its folder's real path"
                ) from exc
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                raise ConnectorError(f"{self.root} is not a folder (unmounted, moved or deleted?)") from exc
            raise ConnectorError(f"cannot read {self.root}: {exc.strerror or exc}") from exc
        finally:
            os.close(top)

    def list(self, known: dict[str, Known]) -> Listing:
        root = self._open_root()
        items, problems = [], []
        try:
            self._walk(root, "", os.fstat(root).st_dev, items, problems)
        except OSError as exc:
            raise ConnectorError(f"cannot read {self.root}: {exc.strerror or exc}") from exc
        finally:
            os.close(root)
        return Listing(items=items, complete=not problems, problems=problems)

    def _walk(self, folder: int, prefix: str, device: int, items: list[Item], problems: list[str]) -> None:
        """List the open `folder` (keys beginning `prefix`): its regular files, then its subfolders'
        in name order. A subfolder that cannot be read leaves a hole: the listing is incomplete
        (nothing is retracted on it)."""
        with os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries if not entry.name.startswith("."))
        subfolders = []
        for name in names:
            key = prefix + name
            try:
                info = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except OSError as exc:
                problems.append(f"cannot read {key}: {exc.strerror or exc}")
                continue
            if info.st_dev != device:
                continue
            if stat.S_ISDIR(info.st_mode):
                subfolders.append(name)
            elif stat.S_ISREG(info.st_mode) and (reader := reader_name(key)) is not None:
                items.append(Item(key=key, version=f"{info.st_size}-{info.st_mtime_ns}", name=reader,
                                  uri=str(self.root / key)))  # fmt: skip
        for name in subfolders:
            try:
                child = open_in(folder, [name], FOLDER, device=device)
            except OSError as exc:
                problems.append(_why(prefix + name, exc))
                continue
            try:
                self._walk(child, f"{prefix}{name}/", device, items, problems)
            except OSError as exc:
                problems.append(f"cannot read {prefix}{name}: {exc.strerror or exc}")
            finally:
                os.close(child)

    def fetch(self, item: Item, known: Known | None) -> Fetched:
        names = item.key.split("/")
        if any(name in ("", ".", "..") for name in names):
            raise ConnectorError(f"{item.key}: not a path inside the folder")
        root = self._open_root()
        try:
            fd = open_in(root, names, FILE, device=os.fstat(root).st_dev)
        except OSError as exc:
            raise ConnectorError(_why(item.key, exc)) from exc
        finally:
            os.close(root)
        with open(fd, "rb") as file:
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise ConnectorError(f"cannot read {item.key}: not a regular file")
                # A hard link is the same file under a second name, and nothing in an inode says
                # where its other names are: one made in the share to a file outside it passes every
                # check on the way. Links within the share are rare enough to refuse them all
                # (counting the names a listing meets would miss hidden files and a link made
                # between the listing and this read); checked on the open file, so no later swap
                # is read.
                if info.st_nlink > 1:
                    raise ConnectorError(
                        f"cannot read {item.key}: a hard link ({info.st_nlink} names for one file), which may "
                        "be a file outside the folder: copy it in instead"
                    )
                # Checked before reading, and the read stops one byte past the limit (the file may grow).
                data = file.read(self.max_bytes + 1) if info.st_size <= self.max_bytes else b""
            except OSError as exc:
                raise ConnectorError(f"cannot read {item.key}: {exc.strerror or exc}") from exc
        if info.st_size > self.max_bytes or len(data) > self.max_bytes:
            raise ConnectorError(f"{item.key}: larger than CAIRN_SOURCES_MAX_BYTES ({self.max_bytes} bytes), not read")
        return Fetched(data)
