"""Questions written from a collection's own headings and definition terms (judges/corpus_questions.py):
what they ask, which sentence answers them, and which sections are their hard negatives."""

import pytest
from django.core.management.base import CommandError

from judges.corpus_questions import (
    SectionChunk,
    answer_pairs,
    heading_subject,
    relevance_pairs,
    section_questions,
    what_question,
)


@pytest.mark.parametrize(
    ("heading", "subject"),
    [
        ("os.lstat(path, *, dir_fd=None)", "os.lstat"),
        ("class csv.Sniffer", "csv.Sniffer"),
        ("time.monotonic() → float", "time.monotonic"),
        ("7.1.2. The String format() Method", "The String format() Method"),
        ("buf.writeInt16BE(value[, offset])", "buf.writeInt16BE"),
        ("--cache-sim=<yes|no> [default: no]", "--cache-sim"),
        ("Example", None),  # a section's kind, not a subject
        ("3.2.", None),
        ("This heading is a whole sentence that goes on far too long to be one", None),
    ],
)
def test_heading_subject_is_what_a_reader_names(heading, subject):
    assert heading_subject(heading) == subject


def test_questions_are_worded_as_readers_ask():
    assert what_question("os.lstat") == "What does os.lstat do?"
    assert what_question("Logging levels") == "What is logging levels?"
    assert what_question("How to sort a list") == "How do I sort a list?"
    assert what_question("Can I delete Python?") == "Can I delete Python?"
    assert what_question("OS exceptions") == "What is OS exceptions?"
    assert what_question("Write Ahead Log") == "What is write ahead log?"
    assert what_question("Unicode HOWTO") == "What is Unicode HOWTO?"


SETTINGS_PAGE = [
    SectionChunk(1, 10, "Server Configuration", "This chapter describes the settings."),
    SectionChunk(
        2, 10, "Server Configuration › Write Ahead Log › wal_level",
        ": Changed in version 9.6: archive and hot_standby were merged into replica.\n"
        ": Determines how much information is written to the WAL. Higher levels record more detail for "
        "replicas.\n: The default value is replica, which writes enough data to support WAL archiving.",
    ),
    SectionChunk(
        3, 10, "Server Configuration › Write Ahead Log › fsync",
        ": If this parameter is on, the server tries to make sure that updates are physically written "
        "to disk. Turning it off can result in unrecoverable data corruption after a crash.",
    ),
    SectionChunk(
        4, 10, "Server Configuration › Write Ahead Log › wal_level",
        ": A second chunk of the same section asks nothing new of its readers.",
    ),
]  # fmt: skip


def test_each_section_asks_what_its_subject_is_and_the_aspects_it_states():
    questions = {q.question: q for q in section_questions(SETTINGS_PAGE)}
    assert set(questions) == {
        "What does wal_level do?", "What is the default for wal_level?", "What is fsync?",
    }  # fmt: skip
    # The change note says what changed, not what it does: the first sentence after it answers.
    what = questions["What does wal_level do?"]
    assert what.answer.text == "Determines how much information is written to the WAL."
    assert what.chunk_id == 2
    default = questions["What is the default for wal_level?"]
    assert default.answer.text.startswith("The default value is replica")
    assert all("default" not in s.text for s in default.others)  # no other sentence that states it is a negative
    # Read as the judge reads strips: under the term they define.
    pairs = answer_pairs([default])
    assert pairs[0] == ("What is the default for wal_level?", default.answer.labelled, 1)
    assert pairs[0][1].startswith("wal_level: The default value is replica")
    assert {label for _, _, label in pairs[1:]} == {0} and len(pairs) > 1


def test_relevance_negatives_are_neighbouring_sections_that_never_name_the_subject():
    questions = [q for q in section_questions(SETTINGS_PAGE) if q.question == "What is fsync?"]
    pairs = relevance_pairs(questions, SETTINGS_PAGE)
    positives = [text for _, text, label in pairs if label == 1]
    negatives = [text for _, text, label in pairs if label == 0]
    assert SETTINGS_PAGE[2].text in positives
    # wal_level's sections are the neighbours; the page's introduction is further away.
    assert negatives[0] in (SETTINGS_PAGE[1].text, SETTINGS_PAGE[3].text)
    assert all("fsync" not in text for text in negatives)


SETTINGS_MARKDOWN = """# Server settings

## Write Ahead Log

wal_level
: Determines how much information is written to the WAL. Higher levels record more detail for replicas.
: The default value is replica, which writes enough data to support WAL archiving.

fsync
: If this parameter is on, the server tries to make sure that updates are physically written to disk.
: Turning it off can result in unrecoverable data corruption after a power failure or a crash.
"""


@pytest.mark.django_db
def test_training_pairs_come_from_an_ingested_collection_and_an_empty_one_is_refused(tmp_path):
    from django.core.management import call_command

    from judges.answer_data import ANSWER_LABELS
    from judges.corpus_questions import NoSectionQuestions, collections_training_pairs

    (tmp_path / "settings.md").write_text(SETTINGS_MARKDOWN)
    call_command("ingest", str(tmp_path), collection="handbook", verbosity=0)
    pairs, counts = collections_training_pairs(["handbook"], lambda qs, _chunks: answer_pairs(qs), ANSWER_LABELS)
    answers = {question: text for question, text, label in pairs if label == 1}
    assert answers["What is the default for wal_level?"].startswith("wal_level: The default value is replica")
    assert counts["corpus:handbook", "answer"] == len(answers) and counts["corpus:handbook", "other"] > 0

    with pytest.raises(NoSectionQuestions, match="--from-corpus nothing"):
        collections_training_pairs(["nothing"], lambda qs, _chunks: answer_pairs(qs), ANSWER_LABELS)


@pytest.mark.django_db
def test_a_retracted_documents_chunks_teach_nothing(tmp_path):
    """--from-corpus reads active documents only, for all three judges (collection_chunks)."""
    from django.core.management import call_command

    from corpus.lifecycle import document_retract
    from corpus.models import Document
    from judges.corpus_questions import collection_chunks

    (tmp_path / "settings.md").write_text(SETTINGS_MARKDOWN)
    call_command("ingest", str(tmp_path), collection="handbook", verbosity=0)
    assert collection_chunks("handbook")
    document_retract(Document.objects.get(collection__slug="handbook"), reason="superseded")
    assert collection_chunks("handbook") == []
    with pytest.raises(CommandError, match="--from-corpus handbook: no chunks of active documents"):
        call_command("train_nli", from_corpus="handbook", data=tmp_path / "no-shared-data")  # refused before reading it
