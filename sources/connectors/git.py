"""A git repository (a URL or a path), read at one branch. Cloned once, bare, into
CAIRN_SOURCES_DIR/git/<id>-<name> (by the source's id: a later source of the same name never finds
it, and removing the source removes it); each sync runs `git fetch` and reads the tree at
origin/<branch> with `git ls-tree`; a file's blob id is its version, so an unchanged file is never
read again.

git runs as the source's reader, not as the worker: with a minimal environment (its own empty home,
so no ~/.gitconfig or ~/.netrc; no system or global config; no SSH agent, no credential helper, no
SSH key but the source's granted one), redirects off and only the source's own transport allowed.
Before each fetch the host's address passes the outbound rule (sources/outbound.py); over http(s)
git connects to the very address checked (an ssh or git:// connection cannot be pinned). A local
repository is checked before each fetch, since what it holds can change after it was saved (see
repository_check), and git reads a private snapshot of it, since it can change after the check too
(see repository_snapshot). After each fetch, a copy above CAIRN_SOURCES_GIT_MAX_BYTES is removed and
the sync fails; a blob above CAIRN_SOURCES_MAX_BYTES is an item that fails."""

from __future__ import annotations

import base64
import contextlib
import errno
import functools
import ipaddress
import os
import re
import resource
import shlex
import shutil
import signal
import stat
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings

from sources.connectors.base import ConnectorError, Fetched, Item, Known, Listing, host_of, reader_name, source_secret
from sources.connectors.nofollow import FILE, FOLDER, open_in
from sources.origins import PORTS
from sources.outbound import checked_address
from sources.places import cairn_place_overlapping

# Transports a source may use: never `ext::` (it runs a command) or anything else unusual. Each
# fetch allows only its source's own.
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"
# From the worker's environment only where git is and which certificate authorities to trust.
_PASSED = ("PATH", "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH")
# No ssh_config, no agent, no prompt; no key but the one given (-i), else none: IdentityFile=none
# drops the worker's own ~/.ssh keys, which ssh finds through the password database whatever HOME says.
_SSH = "ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes"
_SSH_KEYLESS = f"{_SSH} -o IdentityFile=none"
# A host name curl looks up as it is spelled (lower case, as host_of gives it): the address pin
# (http.curloptResolve) is keyed by this very spelling.
_ASCII_NAME = re.compile(r"[a-z0-9._-]+")
# Reads the git folder it is given or nothing: without --strict, one that is no repository sends
# upload-pack on to `PATH.git`, `PATH.git/.git` (a sibling the checks never saw).
_UPLOAD_PACK = "git upload-pack --strict"
# What would make git read a local repository's refs or objects from elsewhere.
_LEADS_ELSEWHERE = ("commondir", "gitdir", "objects/info/alternates", "objects/info/http-alternates")
# A snapshot nests no deeper than this (a git folder comes nowhere near): the copy holds a descriptor a level.
_DEEPEST = 32
# What of a git folder upload-pack reads: a snapshot holds these alone (no hooks, logs or index).
_SNAPSHOT = {"HEAD", "config", "objects", "packed-refs", "refs", "reftable", "shallow"}
# Of its config, only what says how its objects and refs are stored. The rest is the repository
# owner's word to the git that reads it: a partial clone's promisor remote sends upload-pack to
# fetch what is missing from another repository (git before 2.45 ignores GIT_NO_LAZY_FETCH), and
# include.path reads a file elsewhere.
_KEPT_CONFIG = r"^(core\.repositoryformatversion|extensions\.(objectformat|refstorage))$"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def cache_of(source) -> Path:
    """Where `source`'s copy is kept: by its id, so that no later source of its name finds it."""
    return Path(settings.CAIRN_SOURCES_DIR) / "git" / f"{source.pk}-{source.name}"


def cache_remove(cache: Path) -> None:
    shutil.rmtree(cache, ignore_errors=True)


def local_path(location: str) -> Path | None:
    """The path of a local repository's location (a path or a file:// URL); None for a remote one.
    A file:// URL's percent-escapes are decoded, as git decodes them: `%2f..` is a path's `/..`, which
    the checks then see (and refuse); a plain path is taken as it is spelled, `%` and all. Either way
    git is handed this very path, never a URL it would decode again (GitConnector)."""
    if location.startswith("file://"):
        path = unquote(location.removeprefix("file://"))
        if "\x00" in path:
            raise ConnectorError(f"{location}: a path holds no NUL")
        return Path(path)
    return Path(location) if location.startswith("/") else None


def snapshot_of(source) -> Path:
    """Where git reads `source`'s local repository from during a fetch (repository_snapshot)."""
    return Path(settings.CAIRN_SOURCES_DIR) / "snapshots" / str(source.pk)


def _symlink_in(folder: str) -> str | None:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_symlink():
                return entry.path
            if entry.is_dir(follow_symlinks=False) and (found := _symlink_in(entry.path)):
                return found
    return None


def repository_check(path: Path) -> Path:
    """Return the git folder of the local repository at `path` (`path/.git` or, bare, `path`) that git
    is to read, exactly that (upload-pack --strict: no second guess at `path.git` or the like). Raise
    ConnectorError unless git, reading it, reads nothing but it:
    `path` is its own real path (no symlink on the way, so a repository that lay under
    CAIRN_SOURCES_FOLDER_ROOTS when saved still does), it lies in none of Cairn's own files (the
    sources' copies, the originals, the data folder: sources.places), its git folder is a folder
    (not a .git file or a symlink) holding no symlink at all (refs, packed-refs, HEAD, objects) and
    nothing that leads elsewhere (alternates, http-alternates, commondir, gitdir)."""
    if not path.is_absolute() or os.path.realpath(path) != str(path):
        raise ConnectorError(f"{path} is not its own real path: a source never follows a symlink on its way")
    if place := cairn_place_overlapping(path):
        raise ConnectorError(f"{path}: a source reads none of Cairn's own files ({place})")
    dotgit = path / ".git"
    gitdir = dotgit if os.path.lexists(dotgit) else path  # a working tree's, else a bare repository
    try:
        if gitdir == dotgit and (dotgit.is_symlink() or not dotgit.is_dir()):
            raise ConnectorError(f"{dotgit} is not a folder: a .git file or symlink would lead git elsewhere")
        if not _shaped(gitdir):
            raise ConnectorError(f"{path} is not a git repository")
        if found := _symlink_in(str(gitdir)):
            raise ConnectorError(f"{found} is a symlink, which would lead git outside the repository")
    except OSError as exc:
        raise ConnectorError(f"cannot read {path}: {exc.strerror or exc}") from exc
    for name in _LEADS_ELSEWHERE:
        if os.path.lexists(gitdir / name):
            raise ConnectorError(f"{gitdir / name} would lead git to refs or objects outside the repository")
    return gitdir


def _shaped(gitdir: Path) -> bool:
    return (gitdir / "HEAD").is_file() and (gitdir / "objects").is_dir() and (gitdir / "refs").is_dir()


def repository_snapshot(gitdir: Path, into: Path) -> None:
    """Copy the git folder `gitdir` (as repository_check returned it) into `into`, made afresh for
    this process alone (0700); the caller removes it. repository_check looked at `gitdir`, but its
    owner may change it before git reads it (swap in alternates or a symlinked `objects`): git reads
    the copy instead, checked as it is made, each file read once through a descriptor opened without
    following a symlink. Raise ConnectorError, naming the path, at a symlink, anything but regular
    files and folders on `gitdir`'s filesystem, a file with more than one name, anything of
    _LEADS_ELSEWHERE, or past CAIRN_SOURCES_GIT_MAX_BYTES in all. Only what upload-pack reads is
    copied (_SNAPSHOT), and of the repository's config only how its objects and refs are stored."""
    shutil.rmtree(into, ignore_errors=True)  # left by a sync cut short
    into.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.mkdir(into, 0o700)
    top = os.open("/", FOLDER)
    try:
        source = open_in(top, gitdir.parts[1:], FOLDER)
    except OSError as exc:
        raise ConnectorError(f"cannot read {gitdir}: {exc.strerror or exc}") from exc
    finally:
        os.close(top)
    try:
        target = os.open(into, FOLDER)
        try:
            _Copy(gitdir, os.fstat(source).st_dev).folder(source, target, ())
        finally:
            os.close(target)
    except OSError as exc:  # the git folder itself could not be listed
        raise ConnectorError(f"cannot copy {gitdir}: {exc.strerror or exc}") from exc
    finally:
        os.close(source)
    if not _shaped(into):  # HEAD, objects or refs gone since the check
        raise ConnectorError(f"{gitdir} is not a git repository")
    _config_kept(into / "config")


def _config_kept(config: Path) -> None:
    """The snapshot's config: the repository's own cut to _KEPT_CONFIG, as a bare repository's."""
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
                   "GIT_CONFIG_GLOBAL": "/dev/null"}  # fmt: skip
    read = subprocess.run(
        ["git", "config", "--file", str(config), "--no-includes", "--get-regexp", _KEPT_CONFIG],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, env=environment,
    ).stdout if config.exists() else ""  # fmt: skip
    kept = ["[core]", "\tbare = true"]  # a section may come again: git reads them as one
    for key, value in (line.split(" ", 1) for line in read.splitlines() if " " in line):
        section, name = key.split(".", 1)
        if re.fullmatch(r"[A-Za-z0-9._-]+", value):
            kept += [f"[{section}]", f"\t{name} = {value}"]
    config.unlink(missing_ok=True)
    with open(os.open(config, _CREATE, 0o600), "w") as file:
        file.write("\n".join(kept) + "\n")


class _Copy:
    """One snapshot's copying: where it reads from, on which filesystem, and how many bytes are left."""

    def __init__(self, gitdir: Path, device: int) -> None:
        self.gitdir, self.device = gitdir, device
        self.left = settings.CAIRN_SOURCES_GIT_MAX_BYTES

    def folder(self, source: int, target: int, path: tuple[str, ...]) -> None:
        with os.scandir(source) as entries:
            names = sorted(entry.name for entry in entries if path or entry.name in _SNAPSHOT)
        for name in names:
            self.entry(source, target, (*path, name))

    def entry(self, source: int, target: int, path: tuple[str, ...]) -> None:
        name, where = path[-1], self.gitdir.joinpath(*path)
        if "/".join(path) in _LEADS_ELSEWHERE:
            raise ConnectorError(f"{where} would lead git to refs or objects outside the repository")
        try:
            kind = stat.S_IFMT(os.stat(name, dir_fd=source, follow_symlinks=False).st_mode)
            if kind == stat.S_IFLNK:
                raise ConnectorError(f"{where} is a symlink, which would lead git outside the repository")
            if kind not in (stat.S_IFDIR, stat.S_IFREG):
                raise ConnectorError(f"{where} is neither a file nor a folder (a pipe, a device or a socket)")
            if kind == stat.S_IFDIR and len(path) > _DEEPEST:
                raise ConnectorError(f"{where} lies more than {_DEEPEST} folders deep")
            opened = open_in(source, [name], FOLDER if kind == stat.S_IFDIR else FILE, device=self.device)
            try:
                info = os.fstat(opened)
                if stat.S_IFMT(info.st_mode) != kind:
                    raise ConnectorError(f"{where} changed while it was copied")
                if kind == stat.S_IFDIR:
                    os.mkdir(name, 0o700, dir_fd=target)
                    copy = os.open(name, FOLDER, dir_fd=target)
                    try:
                        self.folder(opened, copy, path)
                    finally:
                        os.close(copy)
                else:
                    self.file(opened, info, target, name, where)
            finally:
                os.close(opened)
        except OSError as exc:
            why = "a symlink (never followed)" if exc.errno == errno.ELOOP else exc.strerror or exc
            raise ConnectorError(f"cannot copy {where}: {why}") from exc

    def file(self, opened: int, info: os.stat_result, target: int, name: str, where: Path) -> None:
        # A hard link is the same file under a second name, perhaps one outside the repository (a
        # local clone links its objects to the original's): nothing in the file says where.
        if info.st_nlink > 1:
            raise ConnectorError(
                f"{where} is a hard link ({info.st_nlink} names for one file), which may be a file outside the "
                "repository: run `git repack -a -d` in it, or clone it with --no-hardlinks"
            )
        limit = settings.CAIRN_SOURCES_GIT_MAX_BYTES
        over = ConnectorError(f"{self.gitdir} holds more than CAIRN_SOURCES_GIT_MAX_BYTES ({limit} bytes)")
        if info.st_size > self.left:
            raise over
        with open(os.open(name, _CREATE, 0o600, dir_fd=target), "wb") as copy:
            # One byte past what is left, at most: the file may grow while it is read.
            while chunk := os.read(opened, min(1 << 20, self.left + 1)):
                if len(chunk) > self.left:
                    raise over
                self.left -= len(chunk)
                copy.write(chunk)


def _sizes(folder: Path) -> Iterator[int]:
    for parent, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(FileNotFoundError):  # a temporary file git just removed
                yield os.lstat(Path(parent, name)).st_size


def _size(folder: Path) -> int:
    return sum(_sizes(folder))


def _file_limit(max_bytes: int) -> None:
    """In git's process, before it starts: no file it writes grows past `max_bytes`."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))


class GitConnector:
    def __init__(self, source) -> None:
        self.source = source
        self.url = source.location
        self.branch = source.branch or "main"
        self.cache = cache_of(source)
        self.web = self.url.removesuffix(".git")
        self.local = local_path(self.url)
        self.scheme = "file" if self.local else self.url.split("://", 1)[0] if "://" in self.url else "ssh"
        if self.scheme not in ALLOWED_PROTOCOLS.split(":"):
            raise ConnectorError(f"{self.url}: git reads a source only over {ALLOWED_PROTOCOLS.replace(':', ', ')}")
        self.remote = self.url  # a local one: the git folder repository_check returns (_reach)

    def _environment(self) -> dict[str, str]:
        home = Path(settings.CAIRN_SOURCES_DIR) / "home"
        home.mkdir(parents=True, exist_ok=True)
        return {
            **{name: os.environ[name] for name in _PASSED if name in os.environ},
            "LANG": "C", "LC_ALL": "C", "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
            "GIT_ALLOW_PROTOCOL": self.scheme, "GIT_SSH_COMMAND": _SSH_KEYLESS,
            "GIT_NO_LAZY_FETCH": "1",  # a partial clone's git fetches nothing from another repository
        }  # fmt: skip

    def _git(
        self,
        *args: str,
        binary: bool = False,
        config: Sequence[str] = (),
        env: dict | None = None,
        max_file_bytes: int | None = None,
    ) -> bytes | str:
        options = ["credential.helper=", "http.followRedirects=false", "core.fsmonitor=false", "protocol.allow=never",
                   f"protocol.{self.scheme}.allow=always", *config]  # fmt: skip
        command = ["git", f"--git-dir={self.cache}", *(arg for option in options for arg in ("-c", option)), *args]
        # Its own process group: on a timeout its helpers (remote-http, index-pack) stop with it.
        # `max_file_bytes`: no file it or its helpers write grows past it (RLIMIT_FSIZE, inherited by
        # the helpers; the kernel stops the write), set in the child before git starts.
        limit = None if max_file_bytes is None else functools.partial(_file_limit, max(max_file_bytes, 0))
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env={**self._environment(), **(env or {})}, start_new_session=True,
                              preexec_fn=limit) as process:  # fmt: skip
            try:
                stdout, stderr = process.communicate(timeout=settings.CAIRN_SOURCES_TIMEOUT * 10)
            except subprocess.TimeoutExpired as exc:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                raise ConnectorError(f"git {args[0]} of {self.url} timed out") from exc
        if process.returncode != 0:
            lines = stderr.decode("utf-8", "replace").strip().splitlines()
            raise ConnectorError(f"git {args[0]} of {self.url} failed: {lines[-1] if lines else process.returncode}")
        return stdout if binary else stdout.decode("utf-8", "surrogateescape")

    def _reach(self) -> tuple[list[str], dict[str, str]]:
        """Check where the fetch goes, before anything is written: return the config and environment
        that take git there. The source's granted secret travels in the environment, never on the
        command line (where ps shows it)."""
        if self.local:
            try:
                # The plain path checked, which the snapshot is copied from (_update); never a file://
                # URL: git decodes a URL's %2f into a `/`, and a folder named `x%2f..%2f..%2fother`
                # under a root would lead it to `other`.
                self.remote = str(repository_check(self.local))
            except ConnectorError as exc:
                raise ConnectorError(f"git fetch of {self.url} refused: {exc}") from exc
            return [f"remote.origin.uploadpack={_UPLOAD_PACK}"], {}
        host = host_of(self.url)
        try:
            port = (urlsplit(self.url).port if "://" in self.url else None) or PORTS[self.scheme]
        except ValueError as exc:
            raise ConnectorError(f"{self.url}: the port is not a number") from exc
        address = checked_address(host, port)
        if self.scheme == "git":
            return [], {}
        secret = source_secret(self.source, self.url)
        if self.scheme == "ssh":
            if not secret:
                return [], {}
            if "/" not in self.source.credentials:
                raise ConnectorError(
                    f"the credentials of an ssh repository are a key file's path, not {self.source.credentials}"
                )
            return [], {"GIT_SSH_COMMAND": f"{_SSH} -i {shlex.quote(self.source.credentials)}"}
        config = []
        try:
            ipaddress.ip_address(host)
        except ValueError:  # a name: git connects to the address checked, without a lookup of its own
            if not _ASCII_NAME.fullmatch(host):
                # curl turns an international name into its own punycode (IDNA 2008) and looks that up:
                # a pin for the name as Python spells it is never used, and curl's own answer is.
                raise ConnectorError(
                    f"{self.url}: a repository's host is written in ASCII (punycode for an international name)"
                ) from None
            config.append(f"http.curloptResolve={host}:{port}:{f'[{address}]' if ':' in address else address}")
        if not secret:
            return config, {}
        credentials = "Basic " + base64.b64encode(secret.encode()).decode() if ":" in secret else f"Bearer {secret}"
        return config, {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
                        "GIT_CONFIG_VALUE_0": f"Authorization: {credentials}"}  # fmt: skip

    def _update(self) -> None:
        config, env = self._reach()
        if not self.local:
            return self._fetch(self.remote, config, env)
        snapshot = snapshot_of(self.source)
        try:
            try:
                repository_snapshot(Path(self.remote), snapshot)
            except ConnectorError as exc:
                raise ConnectorError(f"git fetch of {self.url} refused: {exc}") from exc
            self._fetch(str(snapshot), config, env)  # its plain path, read with upload-pack --strict
        finally:
            shutil.rmtree(snapshot, ignore_errors=True)

    def _fetch(self, remote: str, config: list[str], env: dict[str, str]) -> None:
        if not (self.cache / "HEAD").exists():
            self.cache.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--bare", "--template=")  # no sample hooks: nothing but the copy
            self._git("remote", "add", "origin", remote)
        self._git("remote", "set-url", "origin", remote)  # the source's location may have changed
        # Bounded while it runs, not only after: what the fetch brings is one pack (unpackLimit=1: never
        # loose objects, one file each), and no file may grow past what the copy has left of
        # CAIRN_SOURCES_GIT_MAX_BYTES, so a huge repository stops the fetch at the limit instead of
        # filling the disk first.
        limit = settings.CAIRN_SOURCES_GIT_MAX_BYTES
        room = limit - _size(self.cache)
        try:
            if room <= 0:
                raise ConnectorError(f"git fetch of {self.url}: no room left")
            self._git("fetch", "--quiet", "--no-tags", "--prune", "origin",
                      f"+refs/heads/{self.branch}:refs/remotes/origin/{self.branch}",
                      config=[*config, "fetch.unpackLimit=1"], env=env, max_file_bytes=room)  # fmt: skip
        except ConnectorError:
            if room > 0 and not any(size >= room for size in _sizes(self.cache)):
                raise  # it failed for another reason than the limit
            cache_remove(self.cache)
            raise ConnectorError(
                f"git fetch of {self.url}: stopped at CAIRN_SOURCES_GIT_MAX_BYTES ({limit} bytes) while it ran; "
                "its copy was removed"
            ) from None
        if (size := _size(self.cache)) > limit:
            cache_remove(self.cache)
            raise ConnectorError(
                f"git fetch of {self.url}: the repository takes {size} bytes, over CAIRN_SOURCES_GIT_MAX_BYTES "
                f"({limit} bytes); its copy was removed"
            )

    def list(self, known: dict[str, Known]) -> Listing:
        self._update()
        items = []
        # -z: paths as they are (no quoting of non-ASCII names)
        for entry in self._git("ls-tree", "-r", "-z", f"refs/remotes/origin/{self.branch}").split("\0"):
            if not entry:
                continue
            meta, path = entry.split("\t", 1)
            mode, kind, blob = meta.split()
            # a symlink's blob is only the path it names
            if kind != "blob" or mode == "120000" or any(part.startswith(".") for part in path.split("/")):
                continue
            if (name := reader_name(path)) is not None:
                items.append(Item(key=path, version=blob, name=name, uri=f"{self.web}@{self.branch}:{path}"))
        return Listing(items=items, complete=True)

    def fetch(self, item: Item, known: Known | None) -> Fetched:
        try:
            size = int(self._git("cat-file", "-s", item.version))
        except ConnectorError:  # listed on another host: this one's clone has yet to fetch it
            self._update()
            size = int(self._git("cat-file", "-s", item.version))
        if size > settings.CAIRN_SOURCES_MAX_BYTES:
            raise ConnectorError(
                f"{item.key}: {size} bytes, over CAIRN_SOURCES_MAX_BYTES ({settings.CAIRN_SOURCES_MAX_BYTES} bytes)"
            )
        return Fetched(self._git("cat-file", "blob", item.version, binary=True))
