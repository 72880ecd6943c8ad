"""Sources against servers that answer to hurt: the memory and the time a sync gives each.

Three loopback servers, each behind a website source whose sitemap lists the hostile page and then
an ordinary one, synced inline in this process (CAIRN_SOURCES_ALLOW_NETWORKS=127.0.0.0/8, requests
not spaced) with the default CAIRN_SOURCES_MAX_BYTES (50 MiB) and CAIRN_SOURCES_REQUEST_SECONDS at
DEADLINE seconds:

- a 1 GB body, made only as it is read;
- a body that drips a byte every 0.2 s (for ten minutes: it would hold a per-read timeout forever);
- a gzip bomb: 1 GB of zeros, about a megabyte on the wire;
- a crawl of CRAWL_PAGES pages of CRAWL_PAGE_MB each (a chain of links from /docs/index.html), once
  with the bound on the bodies a listing keeps (sources.connectors.base.LISTING_KEEPS_BYTES) and once
  with it lifted, as every body was kept before 2026-12-07.

For each: the peak resident memory above the idle process (Linux's VmHWM, reset before the sync
through /proc/self/clear_refs; idle is after a warm-up sync that loaded the embedder), the seconds
from the hostile request to the next one (the ordinary page's), the item's error, the megabytes the
server sent, and whether the ordinary page was ingested. Floors: each under 150 MB above idle, each
let go within its deadline (CAIRN_SOURCES_REQUEST_SECONDS and a second), the next page ingested;
the bounded crawl under CRAWL_FLOOR_MB above idle (its 32 MiB of kept bodies, the pages being
ingested one at a time, and this process's loopback server's threads, whose allocations count here
too), every page ingested.
Writes benchmarks/results/source_abuse.json.

    .venv/bin/python benchmarks/source_abuse.py
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path

from _common import django_setup, write_result

MB = 1024 * 1024
DEADLINE = 10
FLOOR_MB_ABOVE_IDLE = 150
CRAWL_PAGES, CRAWL_PAGE_MB, CRAWL_FLOOR_MB = 100, 1.9, 400
STAMP = time.strftime("%Y%m%d%H%M%S")


def rss_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (the peak since the last reset) of this process, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def synced(name: str, routes, start: str = "/docs/sitemap.xml") -> tuple:
    """Serve `routes(url)` (tests/test_sources_outbound.py's Server) and sync a website source reading
    its `start` (a sitemap or a page). Returns the run, the server and the peak memory above idle (MB)."""
    from corpus.services import collection_get_or_create
    from sources.services import source_create, source_sync
    from tests.test_sources_outbound import Server

    server = Server({})
    server.routes.update(routes(server.url))
    try:
        collection, _ = collection_get_or_create(slug=f"bench-abuse-{STAMP}-{name}")
        source = source_create(operator=True, collection=collection, name=f"abuse-{STAMP}-{name}", kind="website",
                               location=f"{server.url}{start}")  # fmt: skip
        gc.collect()
        idle = rss_mb("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM back to VmRSS
        run = source_sync(source=source, inline=True)
        return run, server, rss_mb("VmHWM") - idle
    finally:
        server.close()


def main() -> None:
    os.environ["CAIRN_SOURCES_ALLOW_NETWORKS"] = "127.0.0.0/8"
    os.environ["CAIRN_SOURCES_CRAWL_DELAY"] = "0"
    os.environ["CAIRN_SOURCES_REQUEST_SECONDS"] = str(DEADLINE)
    django_setup()
    from django.conf import settings

    from tests.test_sources_outbound import drip, gzip_bomb, html, huge, page, sitemap

    def site(name: str, body):
        """A sitemap listing the hostile page, then an ordinary one."""
        return lambda url: {
            "/docs/sitemap.xml": lambda: sitemap(*(f"{url}/docs/{n}.html" for n in (name, "ok"))),
            f"/docs/{name}.html": body,
            "/docs/ok.html": lambda: html(page(f"The {name} neighbour")),
        }

    hostile = {
        "body_1gb": lambda: html(huge(total=1024 * MB)),
        "slow_drip": lambda: html(drip(seconds=600)),
        "gzip_bomb_1gb": lambda: (200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, gzip_bomb(1024 * MB)),
    }
    result: dict = {
        "settings": {"CAIRN_SOURCES_MAX_BYTES": settings.CAIRN_SOURCES_MAX_BYTES,
                     "CAIRN_SOURCES_REQUEST_SECONDS": settings.CAIRN_SOURCES_REQUEST_SECONDS},
        "cases": {},
    }  # fmt: skip
    warm, _, _ = synced("warm-up", lambda url: {"/docs/sitemap.xml": lambda: sitemap(f"{url}/docs/ok.html"),
                                                "/docs/ok.html": lambda: html(page("Warm"))})  # fmt: skip
    assert warm.added == 1, (warm.error, warm.errors)  # the embedder is loaded: what is idle from here
    result["idle_rss_mb"] = round(rss_mb("VmRSS"), 1)
    for name, body in hostile.items():
        run, server, above = synced(name, site(name, body))
        let_go = server.arrived.get("/docs/ok.html", float("inf")) - server.arrived[f"/docs/{name}.html"]
        result["cases"][name] = {
            "peak_above_idle_mb": round(above, 1),
            "seconds_until_let_go": round(let_go, 2),
            "error": next(iter(run.errors.values()), ""),
            "server_sent_mb": round(server.sent[f"/docs/{name}.html"] / MB, 1),
            "next_page_ingested": run.added == 1,
        }
        print(name, result["cases"][name], flush=True)
    from sources.connectors import base

    padding = b"<!-- " + b"pier " * int(CRAWL_PAGE_MB * MB / 5) + b" -->"  # bytes on the wire, no text

    def crawl(url: str) -> dict:
        def pier(n: int):
            link = [f"p{n + 1}.html"] if n + 1 < CRAWL_PAGES else []
            return html(page(f"Pier {n}", link).replace(b"</body>", padding + b"</body>"))

        return {"/docs/index.html": lambda: html(page("Piers", ["p0.html"])),
                **{f"/docs/p{n}.html": (lambda n=n: pier(n)) for n in range(CRAWL_PAGES)}}  # fmt: skip

    bound = base.LISTING_KEEPS_BYTES
    result["crawl"] = {"pages": CRAWL_PAGES, "page_mb": CRAWL_PAGE_MB, "listing_keeps_mb": bound / MB}
    for label, keeps in (("bounded", bound), ("unbounded_as_before", 1 << 62)):
        base.LISTING_KEEPS_BYTES = keeps
        run, server, above = synced(f"crawl-{label}", crawl, start="/docs/index.html")
        result["crawl"][label] = {"peak_above_idle_mb": round(above, 1), "added": run.added, "failed": run.failed,
                                  "server_sent_mb": round(sum(server.sent.values()) / MB, 1)}  # fmt: skip
        print("crawl", label, result["crawl"][label], flush=True)
    base.LISTING_KEEPS_BYTES = bound
    cases = result["cases"].values()
    result["floors"] = {
        f"peak_under_{FLOOR_MB_ABOVE_IDLE}mb_above_idle": all(c["peak_above_idle_mb"] < FLOOR_MB_ABOVE_IDLE for c in cases),
        "each_let_go_within_its_deadline": all(c["seconds_until_let_go"] <= DEADLINE + 1 for c in cases),
        "next_page_ingested": all(c["next_page_ingested"] for c in cases),
        f"crawl_peak_under_{CRAWL_FLOOR_MB}mb_above_idle": result["crawl"]["bounded"]["peak_above_idle_mb"]
        < CRAWL_FLOOR_MB,
        "crawl_every_page_ingested": result["crawl"]["bounded"]["added"] == CRAWL_PAGES + 1,
    }  # fmt: skip
    print(write_result("source_abuse", result))


if __name__ == "__main__":
    main()
