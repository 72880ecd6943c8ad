"""Sentence splitting and token windows: pure functions, plus the real tokenizer's counts."""

import pytest

from corpus.chunking import chunk_text, split_sentences
from corpus.embedder import get_embedder
from corpus.services import chunk_heading
from readers.blocks import parse_blocks


def words(texts):
    return [len(t.split()) for t in texts]


def split_words(text, n):
    tokens = text.split()
    return [" ".join(tokens[i : i + n]) for i in range(0, len(tokens), n)]


def test_it_keeps_abbreviations_and_initials_inside_sentences():
    text = "Dr. Smith met J. R. R. Tolkien in the U.S. Army. He left! Did he return? Yes."
    assert split_sentences(text) == [
        "Dr. Smith met J. R. R. Tolkien in the U.S. Army.",
        "He left!",
        "Did he return?",
        "Yes.",
    ]
    assert split_sentences("The module (a.k.a. the loader) reads it. Then it runs.") == [
        "The module (a.k.a. the loader) reads it.",
        "Then it runs.",
    ]
    assert split_sentences("Guido van Rossum, a.k.a. BDFL, wrote it.") == ["Guido van Rossum, a.k.a. BDFL, wrote it."]


def test_a_period_inside_parentheses_ends_no_sentence():
    # Valgrind's manual: an answer quoted "Your program will run much slower (eg." as a sentence.
    text = "Your program will run much slower (eg. 20 to 30 times) than normal. It uses more memory."
    assert split_sentences(text) == [
        "Your program will run much slower (eg. 20 to 30 times) than normal.",
        "It uses more memory.",
    ]
    assert split_sentences("It was rebuilt (see the history.) Then it reopened.") == [
        "It was rebuilt (see the history.)",
        "Then it reopened.",
    ]
    assert split_sentences("Use a flag (for example, -v. Quiet runs omit it) to see more. Done.") == [
        "Use a flag (for example, -v. Quiet runs omit it) to see more.",
        "Done.",
    ]


def test_a_time_with_its_zone_is_no_boundary():
    # A split here once left "at about 6:44 p.m." without its zone in an answer, which then read wrong.
    text = "It ended at 6:44 p.m. UTC (2:44 p.m. EDT). We met at 5 p.m. The next day it rained."
    assert split_sentences(text) == [
        "It ended at 6:44 p.m. UTC (2:44 p.m. EDT).",
        "We met at 5 p.m.",
        "The next day it rained.",
    ]


def test_it_treats_paragraphs_headings_and_list_items_as_boundaries():
    # Headings are context, not sentences; an item's marker is not part of its sentence.
    text = "# Title\nIntro line\nwraps here\n\n- first item\n- second item\nNo full stop at the end"
    assert split_sentences(text) == ["Intro line wraps here", "first item", "second item No full stop at the end"]


MANUAL = """# Write Ahead Log

The log protects committed work. It is written before the data files.

## Settings

wal_level (enum)

: Sets how much is logged. The default value is replica.

: Changed in 9.6. It no longer accepts archive.

| Item: identifier length; Upper limit: 63 bytes

| Item | Limit |
|---|---|
| columns | 1600 |

```
char dbname[1024];
if (x) { return 1. }
```
"""


def test_blocks_keep_terms_rows_and_code_apart():
    blocks = parse_blocks(MANUAL)
    assert [b.kind for b in blocks] == [
        "heading", "paragraph", "heading", "term", "definition", "definition", "row", "row", "code",
    ]  # fmt: skip
    assert blocks[4].term == "wal_level (enum)" and blocks[5].term == "wal_level (enum)"
    assert blocks[8].text == "char dbname[1024];\nif (x) { return 1. }"  # verbatim
    assert blocks[7].text == "Item: columns; Limit: 1600"  # a Markdown table's cells under their headers
    # Sentences come from prose only: no heading, no code; a term and a row are one sentence each.
    assert split_sentences(MANUAL) == [
        "The log protects committed work.",
        "It is written before the data files.",
        "wal_level (enum)",
        "Sets how much is logged.",
        "The default value is replica.",
        "Changed in 9.6.",
        "It no longer accepts archive.",
        "Item: identifier length; Upper limit: 63 bytes",
        "Item: columns; Limit: 1600",
    ]


def test_chunks_break_at_sections_and_carry_their_path():
    section = " ".join(f"Rule {i} of this part is stated in ten short words here." for i in range(3))
    short = "Rule 9 of this part is stated in ten short words here."
    text = f"# Guide\n\n## Parking\n\n{section}\n\n## Badges\n\n{short}\n\n### Lost badges\n\nCall security."
    chunks = chunk_text(text, count_tokens=words, split_tokens=split_words, max_tokens=60, overlap_tokens=20)
    assert [c.section for c in chunks] == [("Guide", "Parking"), ("Guide", "Badges")]
    assert chunks[0].text.startswith("# Guide\n\n## Parking\n\nRule 0")
    assert "Badges" not in chunks[0].text  # no chunk ends with the next section's heading
    assert chunks[1].text.startswith("## Badges\n\nRule 9")  # no overlap across the section break
    assert chunks[1].text.endswith("### Lost badges\n\nCall security.")  # a small section rides along
    # What is stored reads back as the same blocks.
    assert [b.kind for b in parse_blocks(chunks[1].text)] == ["heading", "paragraph", "heading", "paragraph"]


def test_a_sections_small_last_subsection_ends_its_chunk_not_the_next_sections():
    # Apache httpd's reference: each directive's section ends with a short "See also" list.
    body = " ".join(f"Rule {i} of this directive is stated in ten short words." for i in range(3))
    text = (
        "# Core\n\n## KeepAlive\n\n" + body + "\n\n### See also\n\n- MaxKeepAliveRequests\n\n"
        "## KeepAliveTimeout\n\n" + body.replace("Rule", "Limit")
    )
    chunks = chunk_text(text, count_tokens=words, split_tokens=split_words, max_tokens=60, overlap_tokens=20)
    assert [c.section for c in chunks] == [("Core", "KeepAlive"), ("Core", "KeepAliveTimeout")]
    assert chunks[0].text.endswith("### See also\n\n- MaxKeepAliveRequests")
    assert chunks[1].text.startswith("## KeepAliveTimeout\n\nLimit 0")


def test_a_definition_list_breaks_between_entries_each_headed_by_its_term():
    entry = "says what the setting does in a dozen plain words for its readers."
    text = (
        "# Settings\n\nAuthor:\n\n: Ann.\n\nRelease:\n\n: 0.1\n\n"  # tiny entries share a chunk
        + "".join(f"setting_{i}\n\n: Setting {i} {entry} Its default is {i}.\n\n" for i in range(3))
        + "re.S\n\nre.DOTALL\n\n: Make the dot match any character at all, including a newline."
    )
    chunks = chunk_text(text, count_tokens=words, split_tokens=split_words, max_tokens=80, overlap_tokens=10)
    assert [c.section for c in chunks] == [
        ("Settings", "Author:"), ("Settings", "setting_1"), ("Settings", "setting_2"), ("Settings", "re.DOTALL"),
    ]  # fmt: skip
    assert chunks[0].text.endswith("Its default is 0.")  # the tiny entries ride along with the first real one
    # Each chunk opens with its entry's term (and the entry's other names), never ends with the next's.
    assert chunks[1].text.startswith("setting_1\n\n: Setting 1") and chunks[1].text.endswith("Its default is 1.")
    assert chunks[-1].text.startswith("re.S\n\nre.DOTALL\n\n: Make the dot")
    assert [b.kind for b in parse_blocks(chunks[-1].text)] == ["paragraph", "term", "definition"]


def test_a_heading_path_names_the_page_once_however_its_spaces_are_written():
    # DocBook (Valgrind, PostgreSQL) writes "4.&nbsp;Memcheck" in the title and the page's h1.
    title = "4.\xa0Memcheck: a memory error detector"
    assert chunk_heading(title, ("4. Memcheck: a memory error detector", "4.8.\xa0Memory Pools")) == (
        "4. Memcheck: a memory error detector › 4.8. Memory Pools"
    )
    assert chunk_heading("Guide", ("Parking",)) == "Guide › Parking"


def test_code_is_never_split_into_sentences_and_long_code_is_cut_between_lines():
    code = "\n".join(f"x{i} = compute(a, b). value()" for i in range(40))
    text = f"Run this. It is long.\n\n```\n{code}\n```\n\nThen stop."
    chunks = chunk_text(text, count_tokens=words, split_tokens=split_words, max_tokens=50, overlap_tokens=10)
    bodies = [b.text for c in chunks for b in parse_blocks(c.text) if b.kind == "code"]
    assert "\n".join(bodies) == code  # every line once, in order, none cut
    assert all(c.token_count <= 50 for c in chunks)
    assert split_sentences(chunks[1].text) == []
    # A definition continued in the next chunk keeps its term in the chunk's section path.
    entry = "term one\n\n: " + " ".join(f"Fact {i} is here." for i in range(20))
    parts = chunk_text(entry, count_tokens=words, split_tokens=split_words, max_tokens=30, overlap_tokens=5)
    assert len(parts) > 1 and all(p.section == ("term one",) for p in parts[1:])


def test_windows_respect_the_budget_and_never_cut_a_sentence():
    sentences = [f"Sentence number {i} has exactly seven words." for i in range(30)]
    chunks = chunk_text(
        " ".join(sentences), count_tokens=words, split_tokens=split_words, max_tokens=30, overlap_tokens=8
    )
    assert all(c.token_count <= 30 for c in chunks)
    for chunk in chunks:
        assert chunk.text.endswith(".")
        assert chunk.text.startswith("Sentence number")
    covered = " ".join(c.text for c in chunks)
    assert all(s in covered for s in sentences)


def test_consecutive_windows_overlap_by_whole_trailing_sentences():
    sentences = [f"Fact {i} is stated in six words." for i in range(12)]
    chunks = chunk_text(
        " ".join(sentences), count_tokens=words, split_tokens=split_words, max_tokens=21, overlap_tokens=7
    )
    assert len(chunks) > 2
    for first, second in zip(chunks, chunks[1:]):
        last_sentence = first.text.split(". ")[-1]
        assert second.text.startswith(last_sentence.rstrip("."))


def test_no_window_opens_with_a_sentence_that_leans_on_one_left_behind():
    text = (
        "Fact 0 is stated in six words. Use the AllowOverrideList directive to allow some named directives. "
        "This lets you name single directives. Fact 3 is stated in six words. Fact 4 is stated in six words."
    )
    chunks = chunk_text(text, count_tokens=words, split_tokens=split_words, max_tokens=24, overlap_tokens=8)
    assert len(chunks) > 1
    assert not any(c.text.startswith("This lets you") for c in chunks[1:])
    assert any("allow some named directives. This lets you" in c.text for c in chunks)


def test_only_a_sentence_longer_than_the_budget_is_cut():
    long_sentence = " ".join(f"w{i}" for i in range(50)) + "."
    chunks = chunk_text(
        f"Short one. {long_sentence} Short two.",
        count_tokens=words,
        split_tokens=split_words,
        max_tokens=20,
        overlap_tokens=0,
    )
    assert all(c.token_count <= 20 for c in chunks)
    pieces = " ".join(c.text for c in chunks).replace("Short one. ", "").replace(" Short two.", "")
    assert pieces == long_sentence  # cut at token boundaries, nothing lost or repeated (no overlap)
    assert chunks[0].text.startswith("Short one. w0")


def test_overlap_must_be_smaller_than_the_window():
    with pytest.raises(ValueError):
        chunk_text("A. B.", count_tokens=words, split_tokens=split_words, max_tokens=10, overlap_tokens=10)


def test_real_tokenizer_windows_fit_the_default_budget():
    embedder = get_embedder()
    text = " ".join(f"The committee reviewed proposal number {i} and approved its budget in full." for i in range(80))
    chunks = chunk_text(
        text, count_tokens=embedder.count_tokens, split_tokens=embedder.split_tokens, max_tokens=200, overlap_tokens=40
    )
    assert len(chunks) > 3
    recounted = embedder.count_tokens([c.text for c in chunks])
    assert all(n <= 200 for n in recounted)
    assert all(abs(n - c.token_count) <= 2 for n, c in zip(recounted, chunks))
