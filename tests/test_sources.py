"""Sources: a folder, a website, a git repository and a Confluence space, each read for real (files
in tmp_path, http.server on loopback, the git binary, a loopback server speaking Confluence's REST
API), synced through sources.services.source_sync with the real MiniLM. For each kind: the first
sync ingests everything; a second rewrites nothing; a change re-chunks only its document, keeping
its unchanged chunks' ids and counters; a deletion retracts (audited, cascading to write-backs);
a source that cannot be reached fails and retracts nothing."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import threading
import uuid
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_network
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from corpus.models import AuditEvent, Chunk, Collection, Document
from corpus.services import collection_get_or_create, curators_group_ensure
from reputation.models import Reputation
from sources.models import Source, SourceItem, SyncRun
from sources.services import source_create, source_item_sync, source_sync
from tests.conftest import client_for
from tests.loopback import LoopbackServer
from writeback.models import WriteBack

pytestmark = pytest.mark.django_db

# Small chunks, no overlap: a document of three paragraphs is more than one chunk, so an edit to
# the last leaves the others' text, and so their ids, as they were.
SMALL_CHUNKS = override_settings(CAIRN_CHUNK_TOKENS=40, CAIRN_CHUNK_OVERLAP_TOKENS=0, CAIRN_SOURCES_CRAWL_DELAY=0)
# The website and Confluence servers here are on loopback, which sources reach only where allowed.
LOOPBACK = override_settings(CAIRN_SOURCES_ALLOW_NETWORKS=[ip_network("127.0.0.0/8")])
TOPICS = ["harbour", "glacier", "orchard", "lighthouse", "meadow"]


def paragraphs(topic: str, edited: bool = False) -> list[str]:
    last = f"The {topic} closes at {'nine' if edited else 'six'} in the evening during the winter months of the year."
    return [
        f"The {topic} guide explains where visitors park their bicycles and where the ferry timetable is posted.",
        f"Guided walks around the {topic} start every morning from the visitor centre beside the old station.",
        last,
    ]


def markdown(topic: str, edited: bool = False) -> str:
    return f"# The {topic} guide\n\n" + "\n\n".join(paragraphs(topic, edited)) + "\n"


def html_page(topic: str, edited: bool = False, links: list[str] = ()) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs(topic, edited))
    nav = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return f"<html><head><title>The {topic} guide</title></head><body><h1>The {topic} guide</h1>{body}<ul>{nav}</ul></body></html>"


def chunks_of(collection: Collection) -> dict[str, list[tuple[int, str]]]:
    """Each active document's chunks as (id, text), by document title."""
    found: dict[str, list] = {}
    for chunk in Chunk.objects.filter(document__collection=collection, document__status="active").select_related(
        "document"
    ):
        found.setdefault(chunk.document.title, []).append((chunk.id, chunk.text))
    return found


def published_on(document: Document) -> WriteBack:
    writeback = WriteBack.objects.create(
        response_id=uuid.uuid4(), question=f"What about {document.title}?", answer="It is so [1].",
        collection=document.collection, status=WriteBack.Status.PUBLISHED,
    )  # fmt: skip
    writeback.evidence_documents.add(document)
    return writeback


def run_checks(kind_fixture, *, first_expected: int, counts_conditional=None) -> None:
    """The five checks every kind passes, in order, on one source."""
    source, collection = kind_fixture.source, kind_fixture.source.collection
    # (1) the first sync ingests every item
    run = source_sync(source=source, inline=True)
    assert (run.status, run.error, run.failed) == ("succeeded", "", 0), (run.error, run.errors)
    assert run.added == first_expected and all(why.startswith("restricted") for why in run.errors.values())
    before = chunks_of(collection)
    assert len(before) == first_expected
    changed_title = f"The {TOPICS[1]} guide"
    assert len(before[changed_title]) >= 2, before[changed_title]

    # (2) nothing changed: nothing is rewritten (for the website, every page asked conditionally)
    kind_fixture.requests_reset()
    run = source_sync(source=source, inline=True)
    assert (run.status, run.added, run.updated, run.retracted, run.chunks) == ("succeeded", 0, 0, 0, 0)
    assert run.unchanged == first_expected
    assert chunks_of(collection) == before
    if counts_conditional:
        counts_conditional()

    # (3) one item changed: only its document is re-chunked; its unchanged chunks keep ids and counters
    changed = Document.objects.get(collection=collection, title=changed_title)
    kept_chunk = before[changed_title][0][0]
    Reputation.objects.create(chunk_id=kept_chunk, alpha=7.0, beta=2.0)
    resting = published_on(changed)
    kind_fixture.change(1)
    run = source_sync(source=source, inline=True)
    assert (run.status, run.updated, run.failed) == ("succeeded", 1, 0), (run.errors, run.counts())
    after = chunks_of(collection)
    assert {t: c for t, c in after.items() if t != changed_title} == {
        t: c for t, c in before.items() if t != changed_title
    }
    assert after[changed_title][:-1] == before[changed_title][:-1]  # the paragraphs before the edit kept theirs
    assert after[changed_title][-1] != before[changed_title][-1] and "nine" in after[changed_title][-1][1]
    assert Reputation.objects.get(chunk_id=kept_chunk).alpha == 7.0
    resting.refresh_from_db()
    assert resting.status == WriteBack.Status.PENDING_REVIEW  # it rests on text that changed

    # (4) one item deleted: retracted in the next sync, audited, with what rests on it
    gone = Document.objects.get(collection=collection, title=f"The {TOPICS[2]} guide")
    resting = published_on(gone)
    kind_fixture.delete(2)
    run = source_sync(source=source, inline=True)
    assert (run.status, run.retracted) == ("succeeded", 1), (run.errors, run.counts())
    gone.refresh_from_db()
    assert gone.status == Document.Status.RETRACTED
    event = AuditEvent.objects.get(action="document.retract", object_id=str(gone.id))
    assert source.name in event.summary
    resting.refresh_from_db()
    assert resting.status == WriteBack.Status.RETRACTED
    assert AuditEvent.objects.filter(action="writeback.retract", object_id=str(resting.id)).exists()

    # (5) unreachable: the sync fails with the reason and retracts nothing
    active = Document.objects.filter(collection=collection, status="active").count()
    reason = kind_fixture.break_()
    run = source_sync(source=source, inline=True)
    assert run.status == "failed" and reason in run.error, run.error
    assert run.retracted == 0
    assert Document.objects.filter(collection=collection, status="active").count() == active
    with pytest.raises(CommandError, match=f"source {source.name}: sync .* failed"):
        call_command("sync", source.name, verbosity=0)


def added(*, name: str, kind: str, location: str, **fields) -> Source:
    collection, _ = collection_get_or_create(slug=f"{name}-docs")
    return source_create(operator=True, collection=collection, name=name, kind=kind, location=location, **fields)


# --- Folder ---------------------------------------------------------------------------------------


class Folder:
    def __init__(self, root: Path) -> None:
        self.root = root / "share"
        (self.root / "guides").mkdir(parents=True)
        for n, topic in enumerate(TOPICS):
            self.path(n).write_text(markdown(topic))
        (self.root / "photo.jpg").write_bytes(b"\xff\xd8\xff not a document")  # no reader: not an item
        self.source = added(name="share", kind="folder", location=str(self.root))

    def path(self, n: int) -> Path:
        return self.root / "guides" / f"{TOPICS[n]}.md"

    def requests_reset(self) -> None:
        pass

    def change(self, n: int) -> None:
        self.path(n).write_text(markdown(TOPICS[n], edited=True))

    def delete(self, n: int) -> None:
        self.path(n).unlink()

    def break_(self) -> str:
        self.root.rename(self.root.with_name("share-unmounted"))
        return "is not a folder"


@SMALL_CHUNKS
def test_a_folder_source_syncs_adds_changes_retracts_and_fails_safe(tmp_path):
    run_checks(Folder(tmp_path), first_expected=5)


@SMALL_CHUNKS
def test_a_renamed_file_with_the_same_bytes_is_the_same_document(tmp_path):
    folder = Folder(tmp_path)
    source_sync(source=folder.source, inline=True)
    document = Document.objects.get(source=str(folder.path(3)))
    chunk_ids = set(document.chunks.values_list("id", flat=True))
    (folder.root / "archive").mkdir()
    folder.path(3).rename(folder.root / "archive" / "lighthouse-2026.md")
    run = source_sync(source=folder.source, inline=True)
    assert (run.status, run.moved, run.added, run.retracted) == ("succeeded", 1, 0, 0), run.counts()
    document.refresh_from_db()
    assert document.status == "active" and document.source == str(folder.root / "archive" / "lighthouse-2026.md")
    assert set(document.chunks.values_list("id", flat=True)) == chunk_ids
    assert AuditEvent.objects.filter(action="document.move_source", object_id=str(document.id)).exists()
    assert SourceItem.objects.get(source=folder.source, key="archive/lighthouse-2026.md").document == document


@SMALL_CHUNKS
def test_a_synced_file_is_kept_as_its_document_s_original_and_a_change_replaces_it(tmp_path):
    folder = Folder(tmp_path)
    source_sync(source=folder.source, inline=True)
    document = Document.objects.get(source=str(folder.path(2)))
    assert document.original.file.read() == folder.path(2).read_bytes()
    folder.change(2)
    source_sync(source=folder.source, inline=True)
    document.refresh_from_db()
    assert document.original.file.read() == folder.path(2).read_bytes()


@SMALL_CHUNKS
def test_an_emptied_folder_retracts_nothing_and_globs_choose_the_items(tmp_path):
    folder = Folder(tmp_path)
    folder.source.exclude = ["guides/meadow*"]
    folder.source.save()
    assert source_sync(source=folder.source, inline=True).added == 4
    for path in (folder.root / "guides").iterdir():
        path.unlink()
    run = source_sync(source=folder.source, inline=True)
    assert run.status == "failed" and "the listing is empty" in run.error and run.retracted == 0


# --- Website --------------------------------------------------------------------------------------


class Website:
    """http.server's SimpleHTTPRequestHandler serving generated pages: it sends Last-Modified and
    answers If-Modified-Since with a 304. Every request's conditional headers are recorded."""

    def __init__(self, root: Path) -> None:
        self.root = root / "site"
        (self.root / "guides").mkdir(parents=True)
        self.requests: list[tuple[str, bool]] = []
        self.pages = {n: f"{TOPICS[n]}.html" for n in range(len(TOPICS))}
        for n, topic in enumerate(TOPICS):
            self.page(n).write_text(html_page(topic))
        self.write_index()
        outer = self

        class Handler(SimpleHTTPRequestHandler):
            def send_head(self):
                conditional = "If-Modified-Since" in self.headers or "If-None-Match" in self.headers
                outer.requests.append((self.path, conditional))
                return super().send_head()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(self.root)))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.source = added(name="intranet", kind="website", location=f"{self.url}/guides/index.html")

    def page(self, n: int) -> Path:
        return self.root / "guides" / self.pages[n]

    def write_index(self) -> None:
        links = [*self.pages.values(), "https://elsewhere.example.org/", "../outside.html"]
        (self.root / "guides" / "index.html").write_text(
            html_page("town", links=links).replace("The town guide", "The town index")
        )
        self._later(self.root / "guides" / "index.html")

    def _later(self, path: Path) -> None:
        # Last-Modified has whole seconds: an edit within the second of the last read would look unchanged.
        stat = path.stat()
        os.utime(path, (stat.st_atime + 100, stat.st_mtime + 100 * (1 + len(self.requests))))

    def requests_reset(self) -> None:
        self.requests.clear()

    def all_conditional(self) -> None:
        pages = [(path, conditional) for path, conditional in self.requests if path != "/robots.txt"]
        assert len(pages) == 6 and all(conditional for _, conditional in pages), self.requests

    def change(self, n: int) -> None:
        self.page(n).write_text(html_page(TOPICS[n], edited=True))
        self._later(self.page(n))

    def delete(self, n: int) -> None:
        self.page(n).unlink()
        del self.pages[n]
        self.write_index()

    def break_(self) -> str:
        self.server.shutdown()
        self.server.server_close()
        return "ConnectError"


@SMALL_CHUNKS
@LOOPBACK
def test_a_website_source_crawls_asks_conditionally_and_fails_safe(tmp_path):
    site = Website(tmp_path)
    run_checks(site, first_expected=6, counts_conditional=site.all_conditional)
    titles = set(Document.objects.filter(collection=site.source.collection).values_list("title", flat=True))
    assert "The town index" in titles and not any("outside" in t for t in titles)


# --- Git ------------------------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


class Repository:
    def __init__(self, root: Path) -> None:
        self.root = root / "handbook"
        (self.root / "docs").mkdir(parents=True)
        git("init", "--quiet", "-b", "main", cwd=self.root)
        for n, topic in enumerate(TOPICS):
            self.path(n).write_text(
                markdown(topic) if n != 4 else f"The {topic} guide\n{'=' * 20}\n\n" + "\n\n".join(paragraphs(topic))
            )
        (self.root / "docs" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
        git("add", ".", cwd=self.root)
        git("commit", "--quiet", "-m", "first", cwd=self.root)
        git("checkout", "--quiet", "-b", "draft", cwd=self.root)  # a branch the source does not read
        (self.root / "docs" / "draft.md").write_text(markdown("draft"))
        git("add", ".", cwd=self.root)
        git("commit", "--quiet", "-m", "draft", cwd=self.root)
        git("checkout", "--quiet", "main", cwd=self.root)
        self.source = added(name="handbook", kind="git", location=str(self.root), branch="main")

    def path(self, n: int) -> Path:
        return self.root / "docs" / (f"{TOPICS[n]}.md" if n != 4 else f"{TOPICS[n]}.rst")

    def requests_reset(self) -> None:
        pass

    def change(self, n: int) -> None:
        self.path(n).write_text(markdown(TOPICS[n], edited=True))
        git("commit", "--quiet", "-am", "edit", cwd=self.root)

    def delete(self, n: int) -> None:
        git("rm", "--quiet", str(self.path(n).relative_to(self.root)), cwd=self.root)
        git("commit", "--quiet", "-m", "delete", cwd=self.root)

    def break_(self) -> str:
        shutil.move(self.root, self.root.with_name("handbook-moved"))
        return "git fetch"


@SMALL_CHUNKS
def test_a_git_source_reads_a_branch_by_blob_and_fails_safe(tmp_path, settings):
    settings.CAIRN_SOURCES_DIR = tmp_path / "cache"
    repository = Repository(tmp_path)
    run_checks(repository, first_expected=5)
    items = set(SourceItem.objects.filter(source=repository.source).values_list("key", flat=True))
    assert "docs/meadow.rst" in items and "docs/draft.md" not in items and "docs/logo.png" not in items


# --- Confluence -----------------------------------------------------------------------------------


class Confluence:
    """Confluence's REST API on loopback, as Cloud and Data Center answer it: pages of a space with
    version, storage body, ancestors and read restrictions, paged by start/limit with _links.next
    (this server gives at most 2 results a page, as real ones cap `limit`); attachments per page."""

    TOKEN = "pat-secret-1"

    def __init__(self, monkeypatch) -> None:
        monkeypatch.setenv("CAIRN_SOURCE_WIKI_TOKEN", self.TOKEN)
        self.pages = {
            str(100 + n): {"title": f"The {topic} guide", "version": 1, "body": self.storage(topic), "restricted": False,
                           "ancestors": []}
            for n, topic in enumerate(TOPICS)
        }  # fmt: skip
        self.pages["200"] = {"title": "Salaries", "version": 1, "body": "<p>Confidential salary table.</p>",
                             "restricted": True, "ancestors": []}  # fmt: skip
        self.pages["201"] = {"title": "Salary bands", "version": 1, "body": "<p>Bands by grade and level.</p>",
                             "restricted": False, "ancestors": [{"id": "200"}]}  # fmt: skip
        self.attachments = {"100": [("300", "ferry-timetable.txt", b"Ferries leave the harbour at seven and at noon.")]}
        self.unauthorised = 0
        self.loopback = LoopbackServer(self.handle)
        self.loopback.__enter__()
        self.source = added(name="eng-wiki", kind="confluence", location=f"{self.loopback.url}/wiki/spaces/ENG",
                            credentials="CAIRN_SOURCE_WIKI_TOKEN")  # fmt: skip

    @staticmethod
    def storage(topic: str, edited: bool = False) -> str:
        return "".join(f"<p>{p}</p>" for p in paragraphs(topic, edited)) + '<ac:structured-macro ac:name="toc"/>'

    def handle(self, method, path, query, body):
        if self.loopback.calls[-1]["headers"].get("Authorization") != f"Bearer {self.TOKEN}":
            self.unauthorised += 1
            return 401, {"message": "unauthorised"}
        start, limit = int(query.get("start", ["0"])[0]), min(int(query.get("limit", ["25"])[0]), 2)
        if path == "/wiki/rest/api/content":
            assert query["spaceKey"] == ["ENG"] and "restrictions.read.restrictions.group" in query["expand"][0]
            # a space's bodies are never held at once: each changed page's item asks for its own
            assert "body" not in query["expand"][0]
            results = [self.content(i, p) for i, p in sorted(self.pages.items())]
            return 200, self.paged(
                results, start, limit, f"/rest/api/content?spaceKey=ENG&type=page&expand={query['expand'][0]}"
            )
        if path.startswith("/wiki/rest/api/content/") and path.split("/")[-1] in self.pages:
            assert "body.storage" in query["expand"][0] and "restrictions.read.restrictions.user" in query["expand"][0]
            return 200, self.content(path.split("/")[-1], self.pages[path.split("/")[-1]])
        if path.startswith("/wiki/rest/api/content/") and path.endswith("/child/attachment"):
            page = path.split("/")[-3]
            results = [{"id": i, "type": "attachment", "title": name, "version": {"number": 1},
                        "_links": {"download": f"/download/attachments/{page}/{name}", "webui": f"/pages/{page}/{name}"}}
                       for i, name, _ in self.attachments.get(page, [])]  # fmt: skip
            return 200, self.paged(results, start, limit, f"/rest/api/content/{page}/child/attachment?expand=version")
        if path.startswith("/wiki/download/attachments/"):
            page, name = path.split("/")[-2:]
            return 200, next(data for _, n, data in self.attachments[page] if n == name)
        return 404, {"message": "not found"}

    @staticmethod
    def paged(results: list, start: int, limit: int, base: str) -> dict:
        shown = results[start : start + limit]
        links = {"base": "ignored", "context": "/wiki"}
        if start + limit < len(results):
            links["next"] = f"{base}&start={start + limit}&limit={limit}"
        return {"results": shown, "start": start, "limit": limit, "size": len(shown), "_links": links}

    @staticmethod
    def content(page_id: str, page: dict) -> dict:
        users = [{"type": "known", "accountId": "x"}] if page["restricted"] else []
        return {
            "id": page_id, "type": "page", "status": "current", "title": page["title"],
            "version": {"number": page["version"]}, "body": {"storage": {"value": page["body"], "representation": "storage"}},
            "ancestors": page["ancestors"],
            "restrictions": {"read": {"restrictions": {"user": {"results": users, "size": len(users)},
                                                       "group": {"results": [], "size": 0}}}},
            "_links": {"webui": f"/spaces/ENG/pages/{page_id}"},
        }  # fmt: skip

    def requests_reset(self) -> None:
        pass

    def change(self, n: int) -> None:
        page = self.pages[str(100 + n)]
        page["body"], page["version"] = self.storage(TOPICS[n], edited=True), page["version"] + 1

    def delete(self, n: int) -> None:
        del self.pages[str(100 + n)]

    def break_(self) -> str:
        self.loopback.__exit__()
        return "ConnectError"


@SMALL_CHUNKS
@LOOPBACK
def test_a_confluence_space_syncs_pages_and_attachments_and_never_indexes_restricted_pages(monkeypatch):
    wiki = Confluence(monkeypatch)
    run_checks(wiki, first_expected=6)  # five pages and one attachment; the restricted two skipped
    assert wiki.unauthorised == 0
    titles = set(Document.objects.filter(collection=wiki.source.collection).values_list("title", flat=True))
    assert not {"Salaries", "Salary bands"} & titles
    assert not Chunk.objects.filter(document__collection=wiki.source.collection, text__icontains="salary").exists()
    first = SyncRun.objects.filter(source=wiki.source).order_by("started_at").first()
    assert first.restricted == 2 and set(first.errors) == {"page:200", "page:201"}
    attachment = Document.objects.get(collection=wiki.source.collection, source__endswith="ferry-timetable.txt")
    assert "seven" in attachment.chunks.get().text


# --- Scale-out, scheduling, command line, API -------------------------------------------------------


@SMALL_CHUNKS
def test_the_queued_path_spreads_items_as_tasks_and_the_last_one_closes_the_run(
    tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)  # each task runs as it is queued, in this process
    folder = Folder(tmp_path)
    with django_capture_on_commit_callbacks(execute=True) as queued:
        run = source_sync(source=folder.source)
    assert len(queued) == 5
    run.refresh_from_db()
    assert (run.status, run.queued, run.done, run.added) == ("succeeded", 5, 5, 5)
    assert not SourceItem.objects.filter(source=folder.source, queued_run__isnull=False).exists()


@SMALL_CHUNKS
def test_an_item_whose_try_was_cut_short_is_not_tried_again_until_the_next_sync(tmp_path):
    """A hostile item that outlived the worker's timeout (or crashed it) is handed out again by the
    broker up to max_attempts times: it is failed on its second delivery instead, so it holds a
    worker once, and the next sync tries it afresh."""
    folder = Folder(tmp_path)
    run = source_sync(source=folder.source)  # queued for the workers: nothing runs in this transaction
    items = list(SourceItem.objects.filter(source=folder.source, queued_run=run).order_by("key"))
    SourceItem.objects.filter(pk=items[0].pk).update(tries=1)  # a worker took it, then died on it
    outcomes = [source_item_sync(run_id=run.id, item_id=item.id) for item in items]
    assert outcomes == ["failed"] + ["added"] * (len(items) - 1)
    run.refresh_from_db()
    assert (run.status, run.failed, run.retracted) == ("succeeded", 1, 0)
    assert "its last try did not finish" in run.errors[items[0].key]
    again = source_sync(source=folder.source, inline=True)
    assert (again.added, again.unchanged, again.failed) == (1, len(items) - 1, 0)
    assert SourceItem.objects.get(pk=items[0].pk).tries == 0


def test_a_source_still_syncing_is_not_synced_again_and_a_stale_run_is_abandoned(tmp_path, settings):
    folder = Folder(tmp_path)
    running = SyncRun.objects.create(source=folder.source)
    skipped = source_sync(source=folder.source, inline=True)
    assert skipped.status == "skipped" and f"sync {running.id} is still running" in skipped.error
    SyncRun.objects.filter(pk=running.pk).update(heartbeat_at=running.heartbeat_at.replace(year=2000))
    assert source_sync(source=folder.source, inline=True).status == "succeeded"
    running.refresh_from_db()
    assert running.status == "failed" and "abandoned" in running.error


def test_a_schedule_is_kept_with_the_source(tmp_path):
    from django_q.models import Schedule

    source = added(name="nightly", kind="folder", location=str(tmp_path), schedule="0 2 * * *")
    schedule = Schedule.objects.get(name=source.schedule_name)
    assert (schedule.func, schedule.schedule_type, schedule.cron) == ("sources.tasks.source_sync", "C", "0 2 * * *")
    from sources.services import source_update

    source_update(source=source, operator=True, schedule="30")
    schedule.refresh_from_db()
    assert (schedule.schedule_type, schedule.minutes) == ("I", 30)
    source_update(source=source, operator=True, enabled=False)
    assert not Schedule.objects.filter(name=source.schedule_name).exists()
    actions = list(
        AuditEvent.objects.filter(object_type="sources.source", object_id=str(source.id)).values_list(
            "action", flat=True
        )
    )
    assert actions.count("source.change") == 2 and "source.add" in actions


@SMALL_CHUNKS
def test_the_command_line_adds_lists_and_syncs(tmp_path, capsys):
    share = tmp_path / "cli-share"
    share.mkdir()
    (share / "a.md").write_text(markdown("harbour"))
    call_command("sources", "add", "cli-share", "--kind", "folder", "--location", str(share), "--collection", "cli",
                 "--public", "--include", "*.md", "--schedule", "15")  # fmt: skip
    assert Collection.objects.get(slug="cli").is_public
    call_command("sources", "list")
    assert "cli-share\tfolder" in capsys.readouterr().out
    call_command("sync", "cli-share", verbosity=0)
    assert "1 added" in capsys.readouterr().out
    with pytest.raises(CommandError, match="source cli-share-2: location: .* is not a folder"):
        call_command("sources", "add", "cli-share-2", "--kind", "folder", "--location", str(tmp_path / "nope"),
                     "--collection", "cli")  # fmt: skip
    with pytest.raises(CommandError, match="source missing: no such source"):
        call_command("sync", "missing")


def test_the_api_lets_curators_manage_their_sources_and_names_the_field_of_bad_input(bob, hr, dana, tmp_path, settings):
    settings.CAIRN_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    (tmp_path / "hr-share").mkdir()
    api = client_for(dana)
    body = {"name": "hr-share", "kind": "folder", "location": str(tmp_path / "hr-share"), "collection": "hr"}
    for bad, field, refused in [
        ({"kind": "ftp"}, "kind", 400),
        ({"location": "etc"}, "location", 400),  # not a folder's shape
        ({"location": "/etc"}, "location", 403),  # the shape, but not a curator's to read
        ({"location": str(tmp_path / "nowhere")}, "location", 404),
        ({"schedule": "every day"}, "schedule", 400),
        ({"credentials": "CAIRN_SECRET_KEY"}, "credentials", 403),  # not granted to hr
        ({"credentials": "hunter2-the-password"}, "credentials", 400),
        ({"include": "*.md"}, "include", 400),
        ({"branch": "main"}, "branch", 400),
        ({"name": "Not A Slug"}, "name", 400),
    ]:
        response = api.post("/api/v1/sources", {**body, **bad}, format="json")
        assert response.status_code == refused and field in response.json(), (bad, response.json())
    response = api.post("/api/v1/sources", {**body, "collection": "finance"}, format="json")  # not one dana curates
    assert response.status_code == 404 and "collection" in response.json()
    response = api.post("/api/v1/sources", {**body, "schedule": "60", "exclude": ["*.tmp"]}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["owner"] == "dana" and response.json()["runs"] == []
    again = api.post("/api/v1/sources", body, format="json")
    assert again.status_code == 409 and again.json() == {"name": ["a source named 'hr-share' exists already"]}
    response = api.patch("/api/v1/sources/hr-share", {"schedule": "0 7 * * *"}, format="json")
    assert response.status_code == 200 and response.json()["schedule"] == "0 7 * * *"
    assert api.patch("/api/v1/sources/hr-share", {"kind": "website"}, format="json").json() == {
        "kind": ["cannot be changed: add a new source instead"]
    }
    assert api.post("/api/v1/sources/hr-share/sync").status_code == 202
    assert [s["name"] for s in api.get("/api/v1/sources").json()] == ["hr-share"]
    # bob curates what the curators group curates, not hr: the source is not there for him
    outsider = client_for(bob)
    assert outsider.get("/api/v1/sources").json() == []
    assert outsider.get("/api/v1/sources/hr-share").status_code == 404
    assert outsider.patch("/api/v1/sources/hr-share", {"enabled": False}, format="json").status_code == 404
    assert outsider.post("/api/v1/sources/hr-share/sync").status_code == 404
    reader = User.objects.create_user("rita")
    reader.groups.add(Group.objects.get(name="hr"))
    assert client_for(reader).get("/api/v1/sources").status_code == 403


def test_the_admin_shows_a_curator_only_the_sources_of_collections_they_curate(bob, hr, dana, tmp_path):
    added(name="hr-folder", kind="folder", location=str(tmp_path))
    Source.objects.filter(name="hr-folder").update(collection=hr)
    added(name="general", kind="folder", location=str(tmp_path))
    curators_group_ensure()
    from django.test import Client

    for user, shown, hidden in [(dana, "hr-folder", None), (bob, "general", "hr-folder")]:
        client = Client()
        client.force_login(user)
        page = client.get("/admin/sources/source/").content.decode()
        assert shown in page and (hidden is None or hidden not in page)
