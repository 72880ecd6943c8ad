"""Sources: how fast a sync is, and how little it does when little changed.

A website source over a real documentation set (Debian's sqlite3-doc HTML pages, the smallest
PAGES of them, links to pages outside the set cut) served by http.server on loopback, synced into
a fresh collection of `cairn_bench`: the first sync, a second with nothing changed (time, chunks
rewritten, share of conditional requests), one page changed, one deleted, the server stopped.
Then a folder of 1,000 small files synced twice (the second unchanged), and the queued path's
throughput with one and with two django-q2 worker processes. Requests are not spaced
(CAIRN_SOURCES_CRAWL_DELAY=0: loopback), and loopback is allowed (CAIRN_SOURCES_ALLOW_NETWORKS).

    .venv/bin/python benchmarks/sources_sync.py [--skip-throughput] [--plot]   # apt-get install -y sqlite3-doc first
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, ROOT, django_setup, write_result  # noqa: E402

DOCS = Path("/usr/share/doc/sqlite3")
PAGES = 120
UNCHANGED_FILES = 1000
THROUGHPUT_FILES = 48
STAMP = time.strftime("%Y%m%d%H%M%S")


def site_of(pages: list[Path], root: Path) -> Path:
    """The pages in `root`/docs, each link to a page outside the set cut, and an index linking them all."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    names = {p.name for p in pages}
    href = re.compile(r'href="([^"#:]+)(#[^"]*)?"')  # relative links; absolute ones leave the site
    for page in pages:
        text = page.read_text(encoding="utf-8", errors="replace")
        text = href.sub(lambda m: m.group(0) if m.group(1) in names else 'href="#"', text)
        (docs / page.name).write_text(text, encoding="utf-8")
    index_links(docs, sorted(names))
    return docs


def index_links(docs: Path, names: list[str]) -> None:
    links = "".join(f'<li><a href="{n}">{n}</a></li>' for n in names)
    (docs / "index.html").write_text(
        "<html><head><title>SQLite documentation (benchmark set)</title></head><body><h1>SQLite documentation</h1>"
        "<p>The pages of the SQLite documentation that this benchmark serves, one link each, so that a crawl "
        f"starting here reaches every one of them.</p><ul>{links}</ul></body></html>"
    )


class Server:
    def __init__(self, root: Path) -> None:
        self.requests: list[tuple[str, bool, int]] = []
        outer = self

        class Handler(SimpleHTTPRequestHandler):
            def send_head(self):
                self._conditional = "If-Modified-Since" in self.headers or "If-None-Match" in self.headers
                return super().send_head()

            def log_request(self, code="-", size="-"):
                outer.requests.append((self.path, getattr(self, "_conditional", False), int(code)))

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def timed_sync(source, **kwargs):
    from sources.services import source_sync

    started = time.perf_counter()
    run = source_sync(source=source, inline=True, **kwargs)
    return run, time.perf_counter() - started


def later(path: Path, seconds: int) -> None:
    stat = path.stat()
    os.utime(path, (stat.st_atime, stat.st_mtime + seconds))  # Last-Modified has whole seconds


def website(work: Path) -> dict:
    from corpus.models import Chunk, Document
    from corpus.services import collection_get_or_create
    from sources.services import source_create

    pages = sorted((p for p in DOCS.glob("*.html") if p.name != "index.html"), key=lambda p: p.stat().st_size)[:PAGES]
    docs = site_of(pages, work / "site")
    server = Server(work / "site")
    collection, _ = collection_get_or_create(slug=f"bench-sources-{STAMP}")
    source = source_create(operator=True, collection=collection, name=f"sqlite-docs-{STAMP}", kind="website",
                           location=f"{server.url}/docs/index.html")  # fmt: skip
    out: dict = {"pages_served": PAGES + 1}

    first, first_s = timed_sync(source)
    out["first"] = {
        "seconds": round(first_s, 2),
        "status": first.status,
        **first.counts(),
        "requests": len(server.requests),
    }
    print("first sync", out["first"], flush=True)

    chunk_ids = set(Chunk.objects.filter(document__collection=collection).values_list("id", flat=True))
    server.requests.clear()
    second, second_s = timed_sync(source)
    pages_asked = [r for r in server.requests if r[0] != "/robots.txt" and r[2] != 404]
    out["second_unchanged"] = {
        "seconds": round(second_s, 2), "status": second.status, **second.counts(), "requests": len(server.requests),
        "conditional_requests": sum(c for _, c, _ in server.requests),
        "conditional_share": round(sum(c for _, c, _ in server.requests) / len(server.requests), 4),
        "conditional_share_of_pages": round(sum(c for _, c, _ in pages_asked) / len(pages_asked), 4),
        "not_modified_304": sum(code == 304 for _, _, code in server.requests),
        "not_found_404": sum(code == 404 for _, _, code in server.requests),
        "chunk_ids_identical": set(Chunk.objects.filter(document__collection=collection).values_list("id", flat=True))
        == chunk_ids,
        "share_of_first_sync_time": round(second_s / first_s, 4),
    }  # fmt: skip
    print("second sync", out["second_unchanged"], flush=True)

    changed = docs / pages[len(pages) // 2].name
    original = changed.read_text()
    end = original.lower().rindex("</p>")  # inside the last paragraph: the reader keeps it (not a menu)
    changed.write_text(original[:end] + " A sentence added to see one page change." + original[end:])
    later(changed, 100)
    run, seconds = timed_sync(source)
    out["one_changed"] = {"seconds": round(seconds, 2), "page": changed.name, **run.counts()}
    print("one changed", out["one_changed"], flush=True)

    deleted = pages[len(pages) // 3].name
    (docs / deleted).unlink()
    index_links(docs, sorted(p.name for p in pages if p.name != deleted))
    later(docs / "index.html", 200)
    run, seconds = timed_sync(source)
    gone = Document.objects.get(collection=collection, source=f"{server.url}/docs/{deleted}")
    out["one_deleted"] = {"seconds": round(seconds, 2), "page": deleted, "document_status": gone.status, **run.counts()}
    print("one deleted", out["one_deleted"], flush=True)

    server.stop()
    active = Document.objects.filter(collection=collection, status="active").count()
    run, seconds = timed_sync(source)
    out["server_stopped"] = {
        "seconds": round(seconds, 2), "status": run.status, "error": run.error[:200], "retracted": run.retracted,
        "active_documents_before": active,
        "active_documents_after": Document.objects.filter(collection=collection, status="active").count(),
    }  # fmt: skip
    print("server stopped", out["server_stopped"], flush=True)
    return out


def folder_of(root: Path, count: int, text) -> Path:
    root.mkdir(parents=True)
    for n in range(count):
        (root / f"note-{n:04d}.md").write_text(text(n))
    return root


def unchanged_folder(work: Path) -> dict:
    from corpus.services import collection_get_or_create
    from sources.services import source_create

    share = folder_of(work / "notes", UNCHANGED_FILES,
                      lambda n: f"# Note {n}\n\nShelf {n} in the archive holds the records of the year {1900 + n % 120}.\n")  # fmt: skip
    collection, _ = collection_get_or_create(slug=f"bench-notes-{STAMP}")
    source = source_create(operator=True, collection=collection, name=f"notes-{STAMP}", kind="folder",
                           location=str(share))  # fmt: skip
    first, first_s = timed_sync(source)
    second, second_s = timed_sync(source)
    out = {"items": UNCHANGED_FILES, "first_seconds": round(first_s, 2), "first_added": first.added,
           "unchanged_seconds": round(second_s, 2), "unchanged": second.unchanged, "chunks_rewritten": second.chunks}  # fmt: skip
    print("1,000 unchanged", out, flush=True)
    return out


def throughput(work: Path) -> dict:
    """The queued path with N worker processes (one torch thread each): items ingested per second,
    timed from the queuing to the run's close, after a warm-up sync that loads each worker's model."""
    from django.db import connection

    from corpus.services import collection_get_or_create
    from sources.models import SyncRun
    from sources.services import source_create, source_sync

    pages = sorted(DOCS.glob("*.html"), key=lambda p: p.stat().st_size)[PAGES : PAGES + THROUGHPUT_FILES]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "CAIRN_DB_NAME": connection.settings_dict["NAME"],
           "CAIRN_Q_WORKERS": "1", "CAIRN_Q_SYNC": "0", "CAIRN_TORCH_THREADS": "1", "CAIRN_LOG_LEVEL": "WARNING"}  # fmt: skip
    out = {"items": THROUGHPUT_FILES}
    for processes in (1, 2):
        workers = [
            subprocess.Popen(
                [sys.executable, "manage.py", "qcluster"],
                cwd=ROOT,
                env=env,
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            for _ in range(processes)
        ]
        try:
            runs = []
            for label, files in (("warm", 4 * processes), ("measured", THROUGHPUT_FILES)):
                share = work / f"throughput-{processes}-{label}"
                share.mkdir()
                for page in (pages if label == "measured" else pages[-files:])[:files]:
                    shutil.copy(page, share / page.name)
                collection, _ = collection_get_or_create(slug=f"bench-throughput-{STAMP}-{processes}-{label}")
                source = source_create(operator=True, collection=collection, kind="folder", location=str(share),
                                       name=f"throughput-{STAMP}-{processes}-{label}")  # fmt: skip
                started = time.perf_counter()
                run = source_sync(source=source)
                while SyncRun.objects.get(pk=run.pk).status == SyncRun.Status.RUNNING:
                    time.sleep(0.2)
                runs.append((SyncRun.objects.get(pk=run.pk), time.perf_counter() - started))
            run, seconds = runs[-1]
            out[f"{processes}_workers"] = {"seconds": round(seconds, 2), "added": run.added, "failed": run.failed,
                                           "chunks": run.chunks, "items_per_second": round(run.done / seconds, 2),
                                           "chunks_per_second": round(run.chunks / seconds, 1)}  # fmt: skip
            print(f"{processes} worker(s)", out[f"{processes}_workers"], flush=True)
        finally:
            for worker in workers:
                os.killpg(worker.pid, 9)
                worker.wait(timeout=30)
    return out


def plot(result: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    site = result["website"]
    flows = result.get("throughput")
    fig, axes = plt.subplots(1, 2 if flows else 1, figsize=(10 if flows else 7, 3.8), squeeze=False)
    left = axes[0][0]
    labels = ["first", "unchanged", "one changed", "one deleted", "server down", "1,000 files\nunchanged"]
    values = [site["first"]["seconds"], site["second_unchanged"]["seconds"], site["one_changed"]["seconds"],
              site["one_deleted"]["seconds"], site["server_stopped"]["seconds"],
              result["folder_1000_unchanged"]["unchanged_seconds"]]  # fmt: skip
    left.bar(labels, values, color=["#4c72b0", "#55a868", "#c44e52", "#8172b2", "#ccb974", "#64b5cd"])
    left.set_ylabel("seconds")
    left.set_title(f"Sync times: website source, {site['pages_served']} sqlite3-doc pages")
    left.tick_params(axis="x", labelsize=8)
    for x, v in enumerate(values):
        left.text(x, v, f"{v:.1f}", ha="center", va="bottom", fontsize=8)
    if flows:
        right = axes[0][1]
        counts = [k for k in ("1_workers", "2_workers") if k in flows]
        right.bar([k.replace("_", " ") for k in counts], [flows[k]["chunks_per_second"] for k in counts])
        right.set_ylabel("chunks ingested per second")
        right.set_title(f"Queued path, {flows['items']} pages")
    fig.tight_layout()
    fig.savefig(RESULTS / "sources_sync.png", dpi=120)


def main() -> None:
    if "--plot" in sys.argv:  # again, from the results written
        plot(json.loads((RESULTS / "sources_sync.json").read_text()))
        return
    if not DOCS.is_dir():
        sys.exit(f"{DOCS} is missing: apt-get install -y sqlite3-doc")
    os.environ["CAIRN_SOURCES_CRAWL_DELAY"] = "0"
    os.environ["CAIRN_SOURCES_ALLOW_NETWORKS"] = "127.0.0.0/8"
    django_setup()
    result: dict = {"measured_on": time.strftime("%Y-%m-%d")}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        result["website"] = website(work)
        write_result("sources_sync", result)  # each part kept as it finishes
        result["folder_1000_unchanged"] = unchanged_folder(work)
        write_result("sources_sync", result)
        if "--skip-throughput" not in sys.argv:
            result["throughput"] = throughput(work)
    site = result["website"]
    result["floors"] = {
        "unchanged_sync_at_most_10pct_of_first": site["second_unchanged"]["share_of_first_sync_time"] <= 0.10,
        "unchanged_sync_rewrites_0_chunks": site["second_unchanged"]["chunks"] == 0,
        "1000_unchanged_items_at_most_30s": result["folder_1000_unchanged"]["unchanged_seconds"] <= 30,
    }
    print(write_result("sources_sync", result))
    plot(result)


if __name__ == "__main__":
    main()
