"""Opening a path below an open folder one component at a time, never through a symlink: what a
folder source and a local git repository's snapshot read with, so that nothing swapped in for a
link after a check is followed out of the place checked."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence

# O_NOFOLLOW refuses a symlink as the last component; each path is opened one component at a time
# from a folder opened so, hence through none. O_NONBLOCK: a pipe swapped in for a file does not
# hang the read (it is refused, not being a regular file).
FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY


def open_in(start: int, names: Sequence[str], flags: int, *, device: int | None = None) -> int:
    """Open the path `names` below the open folder `start`, one component at a time (the last with
    `flags`), never through a symlink and, given `device`, never onto another filesystem. `start`
    stays open; the caller closes what is returned."""
    if not names:
        return os.dup(start)
    opened: list[int] = []
    try:
        for n, name in enumerate(names):
            parent = opened[-1] if opened else start
            opened.append(os.open(name, flags if n == len(names) - 1 else FOLDER, dir_fd=parent))
            if device is not None and os.fstat(opened[-1]).st_dev != device:
                raise OSError(errno.EXDEV, "on another filesystem than the folder (a mount point)")
        return opened.pop()
    finally:
        for fd in opened:
            os.close(fd)
