"""Crafted text against every entry point that reads a user's or a document's text. Each call must
finish within a CPU-time bound that linear code meets with room to spare and a backtracking pattern
misses by orders of magnitude: Python's re holds the GIL, so one such call stalls every thread of
its worker. tests/abuse.py holds the inputs and the entry points; benchmarks/abuse.py times them."""

import gc
import signal
import time
from contextlib import contextmanager

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from corpus.chunking import split_sentences
from corpus.markdown import read_markdown
from corpus.models import Document
from tests.abuse import ENTRY_POINTS, ORDINARY_PASSAGE, inputs
from tests.conftest import client_for

SIZE = 20_000  # characters: a quadratic pattern takes seconds on this much, a cubic one hours
PER_10KB = 0.1  # seconds of CPU per 10,000 characters: twice benchmarks/abuse.py's floor
FLOOR = 0.25  # no call is held to less (a PDF parser's or a tokenizer's fixed costs)
CASES = inputs(SIZE)


class TooSlow(BaseException):
    """Raised inside the call by the watchdog; a BaseException, so no `except Exception` swallows it."""


TABLE = [(entry, case) for entry in ENTRY_POINTS for case in CASES]


@contextmanager
def deadline(seconds: float, *, cpu: bool = True):
    """Interrupt the block after `seconds` of this process's CPU time (or of wall time): re checks
    for signals while it matches, so a runaway pattern fails the test instead of hanging it."""
    timer, signum = (signal.ITIMER_VIRTUAL, signal.SIGVTALRM) if cpu else (signal.ITIMER_REAL, signal.SIGALRM)

    def expire(_signum, _frame):
        raise TooSlow(f"still running after {seconds:.2f} s of {'CPU' if cpu else 'wall'} time")

    previous = signal.signal(signum, expire)
    gc.disable()  # as timeit does: a collection of the session's garbage is not the call's time
    signal.setitimer(timer, seconds)
    slow = ""
    try:
        yield
    except TooSlow as exc:
        slow = str(exc)
    finally:
        signal.setitimer(timer, 0)
        signal.signal(signum, previous)
        gc.enable()
    if slow:  # reported without the traceback: raised inside re, its frames confuse pytest's formatting
        pytest.fail(slow, pytrace=False)


@pytest.fixture(scope="module")
def warm():
    """Each entry point run once on ordinary text: the tokenizer loads outside any bound."""
    for entry in ENTRY_POINTS.values():
        entry.read(entry.arrives(ORDINARY_PASSAGE))


@pytest.mark.parametrize(("entry", "case"), TABLE)
def test_every_entry_point_reads_crafted_text_in_linear_time(warm, entry, case):
    arrived = ENTRY_POINTS[entry].arrives(CASES[case])
    with deadline(max(FLOOR, ENTRY_POINTS[entry].cost * PER_10KB * len(arrived) / 10_000)):
        ENTRY_POINTS[entry].read(arrived)


def test_a_ten_megabyte_line_of_unclosed_markup_is_read_in_seconds():
    line = "[a](<!--`x* . " * (10_000_000 // 14)  # one line: every link, comment and code span unclosed
    with deadline(20):  # about 3 s on 2 cores
        _title, text = read_markdown(line)
        split_sentences(text)


@pytest.mark.django_db
def test_a_question_built_to_make_the_heading_pattern_backtrack_is_answered_in_ordinary_time(charlie):
    # 2,000 characters (the most the API takes), and about something the demo corpus answers, so the
    # answer judge reads it: "# " + words + spaces cost the heading pattern 6 s of CPU per reading.
    asked = "# who got the first nobel prize in physics"
    question = asked + " " * (2000 - len(asked) - 1) + "?"
    client = client_for(charlie)
    assert client.post("/api/v1/query", {"question": asked[2:]}, format="json").status_code == 200  # models loaded
    started, cpu = time.perf_counter(), time.process_time()
    # CPU time, not wall time: a busy machine (a CI host running other jobs) stretches the wall clock
    # of an ordinary answer past any fixed bound, while the backtracking pattern costs CPU itself.
    with deadline(8):  # 0.8 s of CPU here (2026-11-26); 11.5 s when the pattern backtracked
        response = client.post("/api/v1/query", {"question": question}, format="json")
    assert response.status_code == 200, response.content
    assert "Röntgen" in response.json()["answer"]
    print(f"crafted question answered in {time.perf_counter() - started:.1f} s, {time.process_time() - cpu:.1f} s CPU")


@pytest.mark.django_db
def test_an_upload_built_to_make_the_heading_pattern_backtrack_is_ingested_in_the_request(bob):
    text = "# a" + " " * 40_000 + "b\n\nVisitors sign in at the front desk and wear a badge at all times.\n"
    upload = SimpleUploadedFile("abuse.md", text.encode(), content_type="text/markdown")
    with deadline(10, cpu=False):
        response = client_for(bob).post("/api/v1/documents", {"collection": "demo", "file": upload}, format="multipart")
    assert response.status_code == 201, response.content
    assert Document.objects.get(source="upload:abuse.md").chunks.count() == 1
