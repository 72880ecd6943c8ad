"""Shared set-up for the benchmark scripts: a database of their own, the shared data sets, output.

Benchmarks run against `cairn_bench` (override with CAIRN_DB_NAME) on the same server the app
uses (embedded unless DATABASE_URL is set), so they never touch the app's data.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judges.nli_data import DEFAULT_DATA, SharedDataMissing, shared_path, shared_splits  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CACHE = RESULTS / "cache"  # embeddings of the shared data sets, reused across runs (git-ignored)
SHARED_DATA = DEFAULT_DATA  # ../shared/data beside the checkout, or CAIRN_SHARED_DATA


# The environment the benchmark was started with, before django_setup's defaults: its command.
STARTED_WITH = dict(os.environ)


def django_setup() -> None:
    os.environ.setdefault("CAIRN_DB_NAME", "cairn_bench")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CAIRN_LOG_LEVEL", "WARNING")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def shared(*parts: str) -> Path:
    """A file of the shared data sets; when it is missing, exit with judges.nli_data's one message
    (naming the path and CAIRN_SHARED_DATA) instead of a traceback."""
    try:
        return shared_path(SHARED_DATA, *parts)
    except SharedDataMissing as missing:
        sys.exit(str(missing))


def shared_data_splits() -> dict[str, tuple[list, list]]:
    """judges.nli_data.shared_splits of SHARED_DATA, exiting with the same message when a file is missing."""
    try:
        return shared_splits(SHARED_DATA)
    except SharedDataMissing as missing:
        sys.exit(str(missing))


def nq_rows() -> list[dict]:
    """The NQ-open shared split: question, answers, and its one gold Wikipedia passage."""
    path = shared("nq_open_oracle", "nq-open-oracle.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def nq_parts(rows: list[dict]) -> tuple[list[int], list[int], list[int]]:
    """The NQ rows' numbers in judges.nli_data's split: the training part, and the held-out split's
    calibration part (thresholds, choices) and report part (figures)."""
    from judges.nli_data import HELD_OUT, SPLIT_SEED, calibration_split, split

    train, held_out = split(list(range(len(rows))), held_out=HELD_OUT["nq"], seed=SPLIT_SEED)
    calibration, report = calibration_split(held_out)
    return train, calibration, report


def has_gold(text: str, answers) -> bool:
    """Does `text` hold one of the gold answer strings (case-insensitive)?"""
    text = text.lower()
    return any(a.strip() and a.strip().lower() in text for a in answers)


def nq_passages() -> list[dict]:
    """Unique gold passages of the NQ shared split, each with the indices of its questions."""
    passages: dict[str, dict] = {}
    for index, row in enumerate(nq_rows()):
        ctx = row["ctxs"][0]
        entry = passages.setdefault(
            ctx["text"], {"id": f"nq-{len(passages)}", "title": ctx["title"], "text": ctx["text"], "questions": []}
        )
        entry["questions"].append(index)
    return list(passages.values())


def nq_corpus():
    """Ingest the NQ gold passages into collection `nq` (a re-run skips what is there) and return the
    collection, a reader of it and each question's gold document id (question index -> document id)."""
    from django.contrib.auth.models import User
    from tqdm import tqdm

    from corpus.models import Document
    from corpus.services import collection_get_or_create, documents_ingest
    from readers.extract import ExtractedDocument

    passages = nq_passages()
    collection, _ = collection_get_or_create(slug="nq", group_names=["nq-readers"])
    with tqdm(total=len(passages), desc="ingesting NQ passages", unit="doc") as bar:
        documents_ingest(
            collection=collection,
            documents=[ExtractedDocument(p["title"], p["text"], p["id"], "text/plain") for p in passages],
            on_progress=lambda docs, chunks: bar.update(docs),
        )
    user, _ = User.objects.get_or_create(username="nq-reader")
    user.groups.add(*collection.groups.all())
    document_of = dict(Document.objects.filter(collection=collection).values_list("source", "id"))
    return collection, user, {q: document_of[p["id"]] for p in passages for q in p["questions"]}


def free_port() -> int:
    """A port nothing listens on, for a server a benchmark starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.asarray(values), q))


def roc_auc(positives, negatives) -> float:
    """P(a positive scores above a negative), ties counted half (Mann-Whitney)."""
    import numpy as np

    scores = np.concatenate([positives, negatives])
    ranks = scores.argsort(kind="stable").argsort() + 1.0
    for value in np.unique(scores):  # ties share their mean rank
        tied = scores == value
        ranks[tied] = ranks[tied].mean()
    return float(
        (ranks[: len(positives)].sum() - len(positives) * (len(positives) + 1) / 2) / (len(positives) * len(negatives))
    )


def code_version() -> str:
    """The commit the code measured is at, "-dirty" when tracked files differ from it ("unknown"
    outside a git checkout): with the date, what a figure can be re-run from."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--"], cwd=root).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}-dirty" if dirty else commit


def command() -> str:
    """How this benchmark was started, as one would type it again from the checkout."""
    settings = [f"{k}={v}" for k, v in sorted(STARTED_WITH.items())
                if k.startswith("CAIRN_") and not any(w in k for w in ("SECRET", "PASSWORD", "TOKEN", "KEY"))]  # fmt: skip
    return shlex.join([*settings, ".venv/bin/python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])


def write_result(name: str, result: dict) -> Path:
    """results/NAME.json: `result` with when it was measured, on which commit, by which command
    (with the CAIRN_ settings it was given, secrets left out) and on how many cores."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = {"measured_at": time.strftime("%Y-%m-%d %H:%M:%S"), "commit": code_version(), "command": command(),
             "cpu_count": os.cpu_count()}  # fmt: skip
    result = stamp | result
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def cached_embeddings(name: str, texts: list[str]):
    """Embed `texts` with the app's embedder, caching the matrix under benchmarks/results/cache."""
    import numpy as np
    from tqdm import tqdm

    from corpus.embedder import get_embedder

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}.npy"
    if path.exists():
        matrix = np.load(path)
        if len(matrix) == len(texts):
            return matrix
    embedder = get_embedder()
    parts = []
    for start in tqdm(range(0, len(texts), 256), desc=f"embedding {name}", unit="batch"):
        parts.append(embedder.embed(texts[start : start + 256]))
    matrix = np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)
    np.save(path, matrix)
    return matrix
