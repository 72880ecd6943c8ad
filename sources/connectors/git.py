"""A git repository (a URL or a path), read at one branch. Cloned once, bare, into
CAIRN_SOURCES_DIR; each sync runs `git fetch` and reads the tree at origin/<branch> with
`git ls-tree`; a file's blob id is its version, so an unchanged file is never read again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from django.conf import settings

from sources.connectors.base import ConnectorError, Fetched, Item, Known, Listing, reader_name

# Transports a source may use: never `ext::` (it runs a command) or anything else unusual.
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"


class GitConnector:
    def __init__(self, source) -> None:
        self.url = source.location
        self.branch = source.branch or "main"
        self.cache = Path(settings.CAIRN_SOURCES_DIR) / "git" / source.name
        self.web = self.url.removesuffix(".git")

    def _git(self, *args: str, binary: bool = False) -> bytes | str:
        env = {**os.environ, "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS, "GIT_TERMINAL_PROMPT": "0"}
        try:
            done = subprocess.run(
                ["git", "-C", str(self.cache), *args], capture_output=True, env=env,
                timeout=settings.CAIRN_SOURCES_TIMEOUT * 10,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise ConnectorError(f"git {args[0]} of {self.url} timed out") from exc
        if done.returncode != 0:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ConnectorError(f"git {args[0]} of {self.url} failed: {lines[-1] if lines else done.returncode}")
        return done.stdout if binary else done.stdout.decode("utf-8", "surrogateescape")

    def _update(self) -> None:
        if not (self.cache / "HEAD").exists():
            self.cache.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--bare")
            self._git("remote", "add", "origin", self.url)
        self._git("remote", "set-url", "origin", self.url)  # the source's location may have changed
        self._git("fetch", "--quiet", "--no-tags", "--prune", "origin",
                  f"+refs/heads/{self.branch}:refs/remotes/origin/{self.branch}")  # fmt: skip

    def list(self, known: dict[str, Known]) -> Listing:
        self._update()
        items = []
        # -z: paths as they are (no quoting of non-ASCII names)
        for entry in self._git("ls-tree", "-r", "-z", f"refs/remotes/origin/{self.branch}").split("\0"):
            if not entry:
                continue
            meta, path = entry.split("\t", 1)
            _mode, kind, blob = meta.split()
            if kind != "blob" or any(part.startswith(".") for part in path.split("/")):
                continue
            if (name := reader_name(path)) is not None:
                items.append(Item(key=path, version=blob, name=name, uri=f"{self.web}@{self.branch}:{path}"))
        return Listing(items=items, complete=True)

    def fetch(self, item: Item, known: Known | None) -> Fetched:
        try:
            return Fetched(self._git("cat-file", "blob", item.version, binary=True))
        except ConnectorError:  # listed on another host: this one's clone has yet to fetch it
            self._update()
            return Fetched(self._git("cat-file", "blob", item.version, binary=True))
