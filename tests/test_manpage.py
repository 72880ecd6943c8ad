"""Manual pages laid out by troff, in an HTML <pre> or saved as text, are read as sections,
paragraphs and options, not as one code block that no answer ever quotes."""

from readers.blocks import parse_blocks
from readers.extract import extract_bytes
from readers.html import html_to_blocks
from readers.manpage import is_manpage, manpage_blocks

PAGE = """\
QUEUECTL(1)                                                        QUEUECTL(1)

NAME
       queuectl - mail queue control

SYNOPSIS
       queuectl [-v] [-c config_dir] -f

DESCRIPTION
       The  queuectl(1)  command  lists and flushes the mail queue.  It is the
       user interface for queue operations that need no super-user privi-
       leges.

       The following options are recognized:

       -c config_dir
              The main configuration file is in the named directory instead of
              the default configuration directory.

       -f     Flush the queue: attempt to deliver all queued mail.

              Warning: flushing undeliverable mail frequently will result in
              poor delivery performance.

       queue_lifetime (5d)
              How long a message stays in the queue before it is sent back.

   Listing the queue
       Each entry shows the queue ID, the message size and the sender.

EXAMPLE
       To flush the queue of one site:

              queuectl -s example.com

                                                                   QUEUECTL(1)
"""

EXPECTED = [
    "## NAME",
    "queuectl - mail queue control",
    "## SYNOPSIS",
    "```\nqueuectl [-v] [-c config_dir] -f\n```",
    "## DESCRIPTION",
    "The queuectl(1) command lists and flushes the mail queue. It is the user interface for queue operations"
    " that need no super-user privileges.",
    "The following options are recognized:",
    "-c config_dir",
    ": The main configuration file is in the named directory instead of the default configuration directory.",
    "-f",
    ": Flush the queue: attempt to deliver all queued mail.",
    ": Warning: flushing undeliverable mail frequently will result in poor delivery performance.",
    "queue_lifetime (5d)",
    ": How long a message stays in the queue before it is sent back.",
    "### Listing the queue",
    "Each entry shows the queue ID, the message size and the sender.",
    "## EXAMPLE",
    "To flush the queue of one site:",
    "```\nqueuectl -s example.com\n```",
]


def test_a_manual_page_is_read_as_sections_paragraphs_and_options():
    assert is_manpage(PAGE)
    assert manpage_blocks(PAGE) == EXPECTED


def test_a_manual_page_in_an_html_pre_is_no_code_block():
    # Postfix's HTML manual pages: the whole page one <pre>, its names in <b> and links.
    html = PAGE.replace("queuectl(1)", '<a href="queuectl.1.html"><b>queuectl</b>(1)</a>')
    title, text = html_to_blocks(f"<html><head><title>queuectl(1)</title></head><body><pre>{html}</pre></body></html>")
    assert title == "queuectl(1)" and text.split("\n\n") == EXPECTED
    # Each option's description is a definition under its name: what an answer quotes and cites.
    definitions = [(b.term, b.text) for b in parse_blocks(text) if b.kind == "definition"]
    assert ("-f", "Flush the queue: attempt to deliver all queued mail.") in definitions
    assert ("queue_lifetime (5d)", "How long a message stays in the queue before it is sent back.") in definitions


def test_a_manual_page_saved_as_text_is_read_the_same_way():
    (document,) = extract_bytes("queuectl.txt", PAGE.encode(), source="queuectl.txt")
    assert document.text.split("\n\n") == EXPECTED


def test_preformatted_text_that_is_no_manual_page_stays_code():
    code = "NAME = 'x'\nDESCRIPTION = 'y'\n    print(NAME)\n"
    assert not is_manpage(code)
    _title, text = html_to_blocks(f"<html><body><p>Set it so:</p><pre>{code}</pre></body></html>")
    assert text.split("\n\n") == ["Set it so:", f"```\n{code.strip()}\n```"]
