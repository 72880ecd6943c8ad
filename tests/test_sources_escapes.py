"""Sources read only what they were given: written as the attacks a security review confirmed. A
folder source followed symlinks out of its share (a file, a subfolder, the share itself swapped
after the source was saved) and read files of any size; a local git source followed alternates
and symlinks into other repositories and into other sources' copies (even ones swapped in between
the check and git's read); git ran with the worker's environment and home (its ~/.gitconfig, its
keys), reached loopback, sent no granted secret, and left a removed source's copy to the next
source of its name. Real files in tmp_path, the git binary, http.server on loopback."""

from __future__ import annotations

import base64
import functools
import ipaddress
import os
import shutil
import socket
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from common.exceptions import CairnError
from corpus.models import Chunk, Document
from sources.connectors import connector_for
from sources.connectors import git as git_connector
from sources.connectors.base import ConnectorError
from sources.models import SecretGrant, Source
from sources.services import source_create, source_delete, source_sync
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

GIT = shutil.which("git")
GUIDE = "# Harbour guide\n\nThe harbour ferry leaves the north pier every morning at seven.\n"
SECRET = "# Vault\n\nThe vault combination is kept by the treasurer: thirty-one, forty-four, twenty-seven.\n"


def secret_read() -> bool:
    return Chunk.objects.filter(text__icontains="vault combination").exists()


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}  # fmt: skip
    return subprocess.run([GIT, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def repository(path: Path, files: dict[str, str]) -> str:
    """A repository at `path` whose main branch holds `files` in one commit; the commit's id."""
    path.mkdir(parents=True)
    git("init", "--quiet", "-b", "main", cwd=path)
    for name, text in files.items():
        (path / name).write_text(text)
    git("add", ".", cwd=path)
    git("commit", "--quiet", "-m", "files", cwd=path)
    return git("rev-parse", "HEAD", cwd=path).strip()


def bare(work: Path, at: Path) -> Path:
    # --no-hardlinks: a local clone links its objects to the original's, and a hard link is refused
    git("clone", "--quiet", "--bare", "--no-hardlinks", str(work), str(at), cwd=work.parent)
    return at


def holds(copy: Path, commit: str) -> bool:
    return subprocess.run([GIT, f"--git-dir={copy}", "cat-file", "-e", commit], capture_output=True).returncode == 0


@pytest.fixture
def places(tmp_path, settings):
    """The root curators' sources may read under, a share in it, and what lies outside: a folder
    with a secret (standing for /etc) and a private repository holding it."""
    root, outside = tmp_path / "shares", tmp_path / "private"
    (root / "team").mkdir(parents=True)
    (root / "team" / "guide.md").write_text(GUIDE)
    outside.mkdir()
    (outside / "secret.md").write_text(SECRET)
    settings.CAIRN_SOURCES_FOLDER_ROOTS = [root]
    settings.CAIRN_SOURCES_DIR = tmp_path / "cache"
    return SimpleNamespace(root=root, share=root / "team", outside=outside, cache=tmp_path / "cache" / "git")


def share_source(places, bob, collection, **fields) -> Source:
    return source_create(actor=bob, collection=collection, name="team", kind="folder",
                         location=str(places.share), **fields)  # fmt: skip


@pytest.fixture
def git_seen(tmp_path, monkeypatch):
    """What each git a source runs sees: a `git` first on PATH logs its environment and arguments."""
    spy = tmp_path / "spy"
    spy.mkdir()
    (spy / "git").write_text(f'#!/bin/sh\nenv >> "{spy}/env"\nprintf "%s\\n" "$@" >> "{spy}/args"\nexec {GIT} "$@"\n')
    (spy / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{spy}{os.pathsep}{os.environ['PATH']}")
    return lambda: SimpleNamespace(env=(spy / "env").read_text(), args=(spy / "args").read_text())


class Served:
    """A bare repository served as dumb HTTP by http.server, every request's path and Authorization recorded."""

    def __init__(self, repository: Path) -> None:
        git("update-server-info", cwd=repository)
        self.requests: list[tuple[str, str | None]] = []
        outer = self

        class Handler(SimpleHTTPRequestHandler):
            def send_head(self):
                outer.requests.append((self.path, self.headers.get("Authorization")))
                return super().send_head()

            def log_message(self, *args):
                pass

        handler = functools.partial(Handler, directory=str(repository.parent))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def served(tmp_path):
    repository(tmp_path / "work", {"guide.md": GUIDE})
    server = Served(bare(tmp_path / "work", tmp_path / "served" / "handbook.git"))
    yield server
    server.close()


# --- Folders --------------------------------------------------------------------------------------


def test_a_symlink_in_a_share_to_a_file_or_folder_outside_is_not_listed_nor_read(places, bob, finance):
    (places.share / "passwd.txt").symlink_to(places.outside / "secret.md")
    (places.share / "linked").symlink_to(places.outside, target_is_directory=True)
    os.mkfifo(places.share / "pipe.md")  # nor anything else that is not a regular file
    source = share_source(places, bob, finance)
    listing = connector_for(source).list({})
    assert [item.key for item in listing.items] == ["guide.md"] and listing.complete
    run = source_sync(source=source, inline=True)
    assert (run.status, run.added, run.failed) == ("succeeded", 1, 0), run.errors
    assert not secret_read()


def test_a_file_or_its_folder_swapped_for_a_symlink_after_the_listing_is_not_read(places, bob, finance):
    (places.share / "notes").mkdir()
    (places.share / "notes" / "secret.md").write_text(GUIDE)
    connector = connector_for(share_source(places, bob, finance))
    (item,) = [item for item in connector.list({}).items if item.key == "notes/secret.md"]
    assert connector.fetch(item, None).data == GUIDE.encode()
    (places.share / "notes" / "secret.md").unlink()
    (places.share / "notes" / "secret.md").symlink_to(places.outside / "secret.md")
    with pytest.raises(ConnectorError, match="symlink"):
        connector.fetch(item, None)
    shutil.rmtree(places.share / "notes")
    (places.share / "notes").symlink_to(places.outside, target_is_directory=True)
    with pytest.raises(ConnectorError, match="symlink"):
        connector.fetch(item, None)


def test_a_share_swapped_for_a_symlink_after_it_was_saved_reads_nothing_outside_and_retracts_nothing(
    places, bob, finance
):
    source = share_source(places, bob, finance)
    assert source_sync(source=source, inline=True).added == 1
    guide = Document.objects.get(source=str(places.share / "guide.md"))
    places.share.rename(places.root / "team-before")
    places.share.symlink_to(places.outside, target_is_directory=True)
    run = source_sync(source=source, inline=True)
    assert run.status == "failed" and "symlink" in run.error and run.retracted == 0, run.error
    guide.refresh_from_db()
    assert guide.status == "active" and not secret_read()
    # nor may a source be given a path with a symlink on its way: what it leads to can change
    with pytest.raises(CairnError, match="real path"):
        source_create(actor=bob, collection=finance, name="team-link", kind="folder", location=str(places.share))


def test_a_file_larger_than_the_limit_is_an_item_that_fails_naming_it(places, bob, finance, settings):
    settings.CAIRN_SOURCES_MAX_BYTES = 2048
    (places.share / "big.md").write_text("# Big\n\n" + "The harbour is large. " * 200)
    run = source_sync(source=share_source(places, bob, finance), inline=True)
    assert (run.status, run.added, run.failed) == ("succeeded", 1, 1), run.errors
    assert "CAIRN_SOURCES_MAX_BYTES (2048 bytes)" in run.errors["big.md"]


def test_a_hard_link_in_a_share_to_a_file_outside_is_an_item_that_fails_naming_it(
    places, alice, bob, finance, monkeypatch, django_capture_on_commit_callbacks
):
    """A hard link is the outside file under a name in the share: no symlink, nothing on the way to
    refuse. Added and synced over the API by the curator who made it."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)
    os.link(places.outside / "secret.md", places.share / "vault.md")
    api = client_for(bob)
    body = {"name": "team", "kind": "folder", "location": str(places.share), "collection": "finance"}
    assert api.post("/api/v1/sources", body, format="json").status_code == 201
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/api/v1/sources/team/sync").status_code == 202
    (run,) = api.get("/api/v1/sources/team").json()["runs"]
    assert (run["status"], run["counts"]["added"], run["counts"]["failed"]) == ("succeeded", 1, 1), run
    assert run["errors"]["vault.md"].startswith("cannot read vault.md: a hard link (2 names for one file)")
    assert not secret_read()


def test_a_folder_source_reads_none_of_cairn_s_own_files_whatever_the_roots_hold(
    places, bob, hr, finance, tmp_path, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """The originals Cairn keeps (every collection's) lay under the curators' root: bob's folder source
    at them, or at a folder holding them, read hr's. Refused when saved and again at every sync; and
    `manage.py check` names a root drawn so."""
    from django.core.management.base import SystemCheckError
    from django_q.conf import Conf

    from sources.checks import folder_roots_check

    monkeypatch.setattr(Conf, "SYNC", True)
    originals = places.root / "cairn" / "originals"
    settings.STORAGES = {**settings.STORAGES, "originals": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                                           "OPTIONS": {"location": str(originals)}}}  # fmt: skip
    (tmp_path / "hr-share").mkdir()
    (tmp_path / "hr-share" / "vault.md").write_text(SECRET)
    hr_share = source_create(operator=True, collection=hr, name="hr-share", kind="folder",
                             location=str(tmp_path / "hr-share"))  # fmt: skip
    assert source_sync(source=hr_share, inline=True).added == 1
    assert any(path.suffix == ".md" for path in originals.rglob("*"))  # hr's original, kept there
    api = client_for(bob)
    for location in (originals, places.root / "cairn", places.root):
        body = {"name": "kept", "kind": "folder", "location": str(location), "collection": "finance"}
        refused = api.post("/api/v1/sources", body, format="json")
        assert refused.status_code == 403 and "Cairn's own files" in refused.json()["location"][0], refused.json()
    assert api.post("/api/v1/sources", {**body, "location": str(places.share)}, format="json").status_code == 201
    Source.objects.filter(name="kept").update(location=str(places.root))  # changed by another road
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/api/v1/sources/kept/sync").status_code == 202
    run = Source.objects.get(name="kept").runs.get()
    assert run.status == "failed" and "none of Cairn's own files" in run.error, run.error
    assert not Chunk.objects.filter(document__collection=finance, text__icontains="vault combination").exists()
    settings.CAIRN_SOURCES_FOLDER_ROOTS = [originals]
    with pytest.raises(SystemCheckError, match=r"sources.E001.*lies in Cairn's own files"):
        call_command("check")
    settings.CAIRN_SOURCES_FOLDER_ROOTS = [places.root]
    assert [issue.id for issue in folder_roots_check()] == ["sources.W001"]  # sources reaching them are refused


# --- Local git repositories -----------------------------------------------------------------------


def git_source(location: Path | str, collection, actor=None, name: str = "handbook", **fields) -> Source:
    return source_create(actor=actor, operator=actor is None, collection=collection, name=name, kind="git",
                         location=str(location), **fields)  # fmt: skip


def copies(places) -> list[Path]:
    return sorted(places.cache.iterdir()) if places.cache.exists() else []


def snapshots_left(places) -> list[Path]:
    return list((places.cache.parent / "snapshots").glob("*"))


def test_a_repository_that_borrows_another_s_objects_through_alternates_is_refused(places, bob, finance, tmp_path):
    outside = repository(places.outside / "repo", {"secret.md": SECRET})
    repository(tmp_path / "work", {"guide.md": GUIDE})
    handbook = bare(tmp_path / "work", places.root / "handbook.git")
    source = git_source(handbook, finance, bob)
    assert source_sync(source=source, inline=True).added == 1
    (handbook / "objects" / "info" / "alternates").write_text(f"{places.outside / 'repo' / '.git' / 'objects'}\n")
    (handbook / "refs" / "heads" / "main").write_text(f"{outside}\n")
    run = source_sync(source=source, inline=True)
    assert run.status == "failed" and "alternates" in run.error and run.retracted == 0, run.error
    assert not secret_read() and copies(places) and not any(holds(copy, outside) for copy in copies(places))
    with pytest.raises(CairnError, match="alternates"):
        git_source(handbook, finance, bob, name="handbook-2")


@pytest.mark.parametrize("link", ["objects", "refs/heads/main"])
def test_a_repository_with_a_symlink_in_it_is_refused(places, bob, finance, tmp_path, link):
    outside = repository(places.outside / "repo", {"secret.md": SECRET})
    repository(tmp_path / "work", {"guide.md": GUIDE})
    handbook = bare(tmp_path / "work", places.root / "handbook.git")
    source = git_source(handbook, finance, bob)
    if link == "objects":  # the objects of the private repository, and a ref naming its commit
        shutil.rmtree(handbook / "objects")
        (handbook / "objects").symlink_to(places.outside / "repo" / ".git" / "objects")
        (handbook / "refs" / "heads" / "main").write_text(f"{outside}\n")
    else:  # whatever the private repository's branch names, git would read it
        shutil.copytree(places.outside / "repo" / ".git" / "objects", handbook / "objects", dirs_exist_ok=True)
        (handbook / "refs" / "heads" / "main").symlink_to(places.outside / "repo" / ".git" / "refs" / "heads" / "main")
    run = source_sync(source=source, inline=True)
    assert run.status == "failed" and f"{handbook / link} is a symlink" in run.error, run.error
    assert not secret_read() and not copies(places)


@pytest.mark.parametrize("swap", ["objects/info/alternates", "objects"])
def test_a_repository_changed_between_its_check_and_git_s_read_is_refused(
    places, bob, finance, hr, tmp_path, monkeypatch, swap
):
    """bob may write in the repository he gave. Right after the check before a fetch passes, he swaps
    in alternates (or a symlinked `objects`) leading to hr's repository, and a branch naming its
    commit: git read hr's objects, which the check had never seen. git now reads a snapshot, checked
    as it is copied."""
    secret = repository(tmp_path / "hr-handbook", {"secret.md": SECRET})
    git_source(tmp_path / "hr-handbook", hr, name="hr-handbook")  # the operator's, read into hr
    repository(tmp_path / "work", {"guide.md": GUIDE})
    handbook = bare(tmp_path / "work", places.root / "handbook.git")
    git_source(handbook, finance, bob)
    checked, private = git_connector.repository_check, tmp_path / "hr-handbook" / ".git" / "objects"

    def changed_once_checked(path: Path) -> Path:
        gitdir = checked(path)
        if swap == "objects":
            shutil.rmtree(gitdir / "objects")
            (gitdir / "objects").symlink_to(private, target_is_directory=True)
        else:
            (gitdir / "objects" / "info" / "alternates").write_text(f"{private}\n")
        (gitdir / "refs" / "heads" / "main").write_text(f"{secret}\n")
        return gitdir

    monkeypatch.setattr(git_connector, "repository_check", changed_once_checked)
    with pytest.raises(CommandError, match=f"refused: {handbook / swap} (is a symlink|would lead git)"):
        call_command("sync", "handbook", verbosity=0)
    assert not secret_read() and not any(holds(copy, secret) for copy in copies(places))
    assert snapshots_left(places) == []


def test_a_repository_s_own_config_sends_git_to_no_other_repository(places, bob, finance, hr, tmp_path):
    """bob's repository says it is a partial clone whose promisor is hr's repository, names hr's
    commit and includes a file elsewhere: its config is bob's word to the git that reads it (git
    before 2.45 ignores GIT_NO_LAZY_FETCH). The snapshot keeps only the config that says how objects
    and refs are stored, so git reads bob's objects alone, which hold no such commit."""
    secret = repository(tmp_path / "hr-handbook", {"secret.md": SECRET})
    git_source(tmp_path / "hr-handbook", hr, name="hr-handbook")  # the operator's, read into hr
    repository(tmp_path / "work", {"guide.md": GUIDE})
    handbook = bare(tmp_path / "work", places.root / "handbook.git")
    for key, value in (("core.repositoryformatversion", "1"), ("extensions.partialClone", "hr"),
                       ("remote.hr.url", str(tmp_path / "hr-handbook")), ("remote.hr.promisor", "true"),
                       ("include.path", str(tmp_path / "elsewhere.conf"))):  # fmt: skip
        git("config", key, value, cwd=handbook)
    (handbook / "refs" / "heads" / "main").write_text(f"{secret}\n")
    snapshot = tmp_path / "snapshot"
    git_connector.repository_snapshot(handbook, snapshot)
    kept = git("config", "--file", str(snapshot / "config"), "--list", cwd=tmp_path).split()
    assert kept == ["core.bare=true", "core.repositoryformatversion=1"], kept
    git_source(handbook, finance, bob)
    with pytest.raises(CommandError, match="git fetch of .* failed"):
        call_command("sync", "handbook", verbosity=0)
    assert not secret_read() and not any(holds(copy, secret) for copy in copies(places))
    assert snapshots_left(places) == []


def test_a_repository_with_a_hard_linked_file_is_refused_naming_the_fix(places, bob, finance, tmp_path):
    """A file's second name may lie outside the repository (another collection's object, linked in),
    and nothing in the file says so. A local clone links its objects to the original's, hence the fix."""
    repository(tmp_path / "work", {"guide.md": GUIDE})
    handbook = places.root / "handbook.git"
    git("clone", "--quiet", "--bare", str(tmp_path / "work"), str(handbook), cwd=tmp_path)  # hard links
    source = git_source(handbook, finance, bob)
    with pytest.raises(CommandError, match=r"objects/.* is a hard link .*`git repack -a -d`.*--no-hardlinks"):
        call_command("sync", "handbook", verbosity=0)
    assert snapshots_left(places) == []
    git("repack", "-a", "-d", "-q", cwd=handbook)
    call_command("sync", "handbook", verbosity=0)
    assert source.runs.get(status="succeeded").added == 1 and snapshots_left(places) == []


def test_another_source_s_copy_is_no_repository_to_read(places, bob, finance, hr, tmp_path, settings):
    settings.CAIRN_SOURCES_FOLDER_ROOTS = [tmp_path]  # the copies lie under a root, as on a shared data disk
    repository(tmp_path / "hr-handbook", {"secret.md": SECRET})
    private = git_source(tmp_path / "hr-handbook", hr, name="hr-handbook")
    assert source_sync(source=private, inline=True).added == 1
    (copy,) = copies(places)
    with pytest.raises(CairnError, match="Cairn's own files"):
        git_source(copy, finance, bob)
    repository(places.root / "handbook", {"guide.md": GUIDE})
    source = git_source(places.root / "handbook", finance, bob)
    Source.objects.filter(pk=source.pk).update(location=f"file://{copy}")  # changed by another road
    run = source_sync(source=Source.objects.get(pk=source.pk), inline=True)
    assert run.status == "failed" and "CAIRN_SOURCES_DIR" in run.error, run.error
    assert not Chunk.objects.filter(document__collection=finance, text__icontains="vault combination").exists()


def test_git_runs_with_a_minimal_environment_not_the_worker_s(places, bob, finance, tmp_path, monkeypatch, git_seen):
    """The worker's ~/.gitconfig would send the fetch to the private repository (url.insteadOf), its
    variables would reach git and its hooks, its agent would offer its keys."""
    repository(places.outside / "repo", {"secret.md": SECRET})
    handbook = places.root / "handbook"
    repository(handbook, {"guide.md": GUIDE})
    home = tmp_path / "worker-home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f'[url "{places.outside / "repo"}"]\n\tinsteadOf = {handbook}\n\tinsteadOf = file://{handbook}\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CAIRN_SECRET_KEY", "worker-secret-marker")
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    run = source_sync(source=git_source(handbook, finance, bob), inline=True)
    assert (run.status, run.added) == ("succeeded", 1), run.error
    assert not secret_read()
    seen = git_seen()
    assert "worker-secret-marker" not in seen.env and str(home) not in seen.env and "SSH_AUTH_SOCK" not in seen.env
    assert f"HOME={django_settings.CAIRN_SOURCES_DIR / 'home'}\n" in seen.env
    assert "GIT_CONFIG_GLOBAL=/dev/null\n" in seen.env and "GIT_CONFIG_NOSYSTEM=1\n" in seen.env


# --- Git over the network -------------------------------------------------------------------------


def test_a_git_source_at_a_loopback_address_is_refused_before_git_connects(places, bob, finance, served, settings):
    settings.CAIRN_SOURCES_ALLOW_NETWORKS = []
    source = git_source(f"http://127.0.0.1:{served.port}/handbook.git", finance, bob)
    run = source_sync(source=source, inline=True)
    assert run.status == "failed" and "CAIRN_SOURCES_ALLOW_NETWORKS" in run.error, run.error
    assert served.requests == [] and not copies(places)


def test_git_over_http_goes_to_the_address_checked_carrying_only_a_granted_secret(
    places, bob, finance, served, settings, monkeypatch, git_seen
):
    """git.example.test resolves here alone (git itself could not look it up): the fetch reaching
    the server shows git connected to the address checked. The granted secret is sent as the
    Authorization header, never on git's command line; an ungranted one fails before any request."""
    settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]
    resolve = socket.getaddrinfo
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, *a, **k: resolve("127.0.0.1" if host == "git.example.test" else host, *a, **k),
    )
    monkeypatch.setenv("CAIRN_SOURCE_GIT_TOKEN", "reader:s3cret-token")
    monkeypatch.setenv("CAIRN_SOURCE_OTHER_TOKEN", "other-s3cret-token")
    SecretGrant.objects.create(name="CAIRN_SOURCE_GIT_TOKEN", collection=finance, scheme="http",
                               host="git.example.test", port=served.port)  # fmt: skip
    location = f"http://git.example.test:{served.port}/handbook.git"
    source = git_source(location, finance, bob, credentials="CAIRN_SOURCE_GIT_TOKEN")
    run = source_sync(source=source, inline=True)
    assert (run.status, run.added) == ("succeeded", 1), run.error
    basic = "Basic " + base64.b64encode(b"reader:s3cret-token").decode()
    assert served.requests and all(authorization == basic for _, authorization in served.requests), served.requests
    assert "s3cret" not in git_seen().args
    served.requests.clear()
    other = Source.objects.create(collection=finance, name="other", kind="git", location=location,
                                  credentials="CAIRN_SOURCE_OTHER_TOKEN")  # fmt: skip
    run = source_sync(source=other, inline=True)
    assert run.status == "failed" and "not granted" in run.error and served.requests == [], run.error


def test_git_never_looks_up_a_name_itself_where_python_and_curl_would_spell_it_apart(
    places, bob, finance, served, settings, monkeypatch
):
    """The address pin is keyed by the host as Python spells it; curl looks up an international name
    as its own punycode, so the pin went unused and curl's own lookup (a second answer, after the
    check) was connected to. Such a host is refused before git runs; spellings curl matches (upper
    case, a trailing dot) reach the address checked."""
    settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]
    resolve = socket.getaddrinfo
    names = {"git.example.test", "git.example.test.", "bücher.example.test"}
    monkeypatch.setattr(socket, "getaddrinfo",
                        lambda host, *a, **k: resolve("127.0.0.1" if host in names else host, *a, **k))  # fmt: skip
    run = source_sync(source=git_source(f"http://bücher.example.test:{served.port}/handbook.git", finance, bob),
                      inline=True)  # fmt: skip
    assert run.status == "failed" and "written in ASCII (punycode" in run.error, run.error
    assert served.requests == []
    for n, host in enumerate(["GIT.example.test", "git.example.test."]):
        source = git_source(f"http://{host}:{served.port}/handbook.git", finance, bob, name=f"handbook-{n}")
        assert source_sync(source=source, inline=True).status == "succeeded"


def test_a_curator_cannot_add_an_ssh_or_git_protocol_repository(bob, finance):
    api = client_for(bob)
    for location in ("ssh://git@git.example.org/hr/handbook.git", "git@git.example.org:hr/handbook.git",
                     "git://git.example.org/hr/handbook.git"):  # fmt: skip
        body = {"name": "handbook", "kind": "git", "location": location, "collection": "finance"}
        response = api.post("/api/v1/sources", body, format="json")
        assert response.status_code == 403 and "added by operators" in response.json()["location"][0], location
    assert git_source("ssh://git@git.example.org/hr/handbook.git", finance).kind == "git"  # an operator may


# --- The copies ------------------------------------------------------------------------------------


def test_a_removed_git_source_takes_its_copy_and_a_new_one_of_its_name_starts_afresh(
    places, bob, finance, tmp_path, django_capture_on_commit_callbacks
):
    first = repository(places.root / "first", {"secret.md": SECRET})
    source = git_source(places.root / "first", finance, bob)
    assert source_sync(source=source, inline=True).added == 1
    (copy,) = copies(places)
    assert holds(copy, first)
    with django_capture_on_commit_callbacks(execute=True):
        source_delete(source=source, actor=bob)
    assert copies(places) == []
    repository(places.root / "second", {"guide.md": GUIDE})
    source = git_source(places.root / "second", finance, bob)
    assert source_sync(source=source, inline=True).status == "succeeded"
    (fresh,) = copies(places)
    assert fresh != copy and not holds(fresh, first)


def test_a_repository_over_the_size_limit_fails_and_its_copy_is_removed(places, bob, finance, settings):
    settings.CAIRN_SOURCES_GIT_MAX_BYTES = 4096
    repository(places.root / "handbook", {"guide.md": GUIDE, "more.md": "# More\n\n" + os.urandom(8192).hex()})
    run = source_sync(source=git_source(places.root / "handbook", finance, bob), inline=True)
    assert run.status == "failed" and "CAIRN_SOURCES_GIT_MAX_BYTES (4096 bytes)" in run.error, run.error
    assert copies(places) == [] and run.added == 0


def test_a_fetch_is_stopped_at_the_size_limit_while_it_runs_not_after(places, bob, finance, settings, tmp_path):
    """The limit was checked only once the fetch had written the whole repository: a huge one filled
    the disk first. git now runs with no file allowed past the room the copy has left (one pack). A
    local repository is stopped sooner, while its snapshot is taken."""
    settings.CAIRN_SOURCES_GIT_MAX_BYTES = 256 * 1024
    settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]
    repository(places.root / "handbook", {"guide.md": GUIDE})
    (places.root / "handbook" / "noise.md").write_bytes(os.urandom(4 * 1024 * 1024))  # incompressible
    git("add", ".", cwd=places.root / "handbook")
    git("commit", "--quiet", "-m", "noise", cwd=places.root / "handbook")
    served = Served(bare(places.root / "handbook", tmp_path / "served" / "handbook.git"))
    try:
        location = f"http://127.0.0.1:{served.port}/handbook.git"
        run = source_sync(source=git_source(location, finance, bob, name="served"), inline=True)
    finally:
        served.close()
    assert run.status == "failed" and "stopped at CAIRN_SOURCES_GIT_MAX_BYTES (262144 bytes) while it ran" in run.error
    assert copies(places) == [] and run.added == 0
    run = source_sync(source=git_source(places.root / "handbook", finance, bob), inline=True)
    assert run.status == "failed" and "holds more than CAIRN_SOURCES_GIT_MAX_BYTES (262144 bytes)" in run.error
    assert copies(places) == [] and run.added == 0


def test_a_blob_larger_than_the_limit_is_an_item_that_fails_naming_it(places, bob, finance, settings):
    settings.CAIRN_SOURCES_MAX_BYTES = 2048
    repository(places.root / "handbook", {"guide.md": GUIDE, "big.md": "# Big\n\n" + "The harbour is large. " * 200})
    run = source_sync(source=git_source(places.root / "handbook", finance, bob), inline=True)
    assert (run.status, run.added, run.failed) == ("succeeded", 1, 1), run.errors
    assert "CAIRN_SOURCES_MAX_BYTES (2048 bytes)" in run.errors["big.md"]


# --- Percent-escapes: the path checked is the path git reads --------------------------------------


@pytest.mark.parametrize("target", ["repository", "sibling"])
def test_a_percent_encoded_path_under_a_root_reads_no_other_collection_s_repository(
    places, alice, bob, hr, finance, tmp_path, monkeypatch, django_capture_on_commit_callbacks, target
):
    """bob curates finance and may read under the shares root. He makes `shares/x` and, beside it, a
    repository named `x%2f..%2f..%2fhr-handbook`: git decodes %2f in a file:// URL, so a fetch of that
    folder as file://… read hr's repository instead, while every check looked at the folder of that
    literal name. Likewise a folder that is almost a repository
    (no refs) sent git on to a `NAME.git` beside it, a symlink the checks never looked at."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)  # each task runs as it is queued, in this process
    repository(tmp_path / "hr-handbook", {"secret.md": SECRET})  # the operator's, read into hr
    private = git_source(tmp_path / "hr-handbook", hr, name="hr-handbook")
    assert source_sync(source=private, inline=True).added == 1
    (places.root / "x").mkdir()
    decoy = places.root / ("x%2f..%2f..%2fhr-handbook" if target == "repository" else "x")
    for folder in ("objects", "refs/heads") if target != "sibling" else ("objects",):
        (decoy / folder).mkdir(parents=True, exist_ok=True)
    (decoy / "HEAD").write_text("ref: refs/heads/main\n")
    if target == "sibling":
        (places.root / "x.git").symlink_to(tmp_path / "hr-handbook" / ".git", target_is_directory=True)
    api = client_for(bob)
    for location in (str(decoy), f"file://{decoy}"):
        body = {"name": "ledger", "kind": "git", "location": location, "collection": "finance"}
        created = api.post("/api/v1/sources", body, format="json")
        if created.status_code != 201:  # refused outright: that is a way out too
            assert created.status_code in (403, 404) and "location" in created.json(), created.json()
            continue
        with django_capture_on_commit_callbacks(execute=True):
            assert api.post("/api/v1/sources/ledger/sync").status_code == 202
        run = Source.objects.get(name="ledger").runs.get()
        assert run.status == "failed" and run.added == 0, (run.status, run.error)
        Source.objects.filter(name="ledger").delete()
    assert not Chunk.objects.filter(document__collection=finance, text__icontains="vault combination").exists()
    answer = client_for(alice).post("/api/v1/query", {"question": "What is the vault combination?", "mode": "fast"},
                                    format="json")  # fmt: skip
    assert answer.status_code == 200 and "forty-four" not in answer.content.decode()
