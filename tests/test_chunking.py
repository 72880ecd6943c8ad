"""Sentence splitting and token windows: pure functions, plus the real tokenizer's counts."""

import pytest

from corpus.chunking import chunk_text, split_sentences
from corpus.embedder import get_embedder


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


def test_a_time_with_its_zone_is_no_boundary():
    # A split here once left "at about 6:44 p.m." without its zone in an answer, which then read wrong.
    text = "It ended at 6:44 p.m. UTC (2:44 p.m. EDT). We met at 5 p.m. The next day it rained."
    assert split_sentences(text) == [
        "It ended at 6:44 p.m. UTC (2:44 p.m. EDT).",
        "We met at 5 p.m.",
        "The next day it rained.",
    ]


def test_it_treats_paragraphs_headings_and_list_items_as_boundaries():
    text = "# Title\nIntro line\nwraps here\n\n- first item\n- second item\nNo full stop at the end"
    assert split_sentences(text) == [
        "# Title",
        "Intro line wraps here",
        "- first item",
        "- second item No full stop at the end",
    ]


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
