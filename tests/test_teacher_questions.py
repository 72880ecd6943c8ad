"""What a teacher writes over a collection's passages, checked before anything learns from it
(judges/teacher_questions.py): the quoted sentence must be in the passage and one the gate reads,
a question must not restate its sentence or be asked twice, and the pairs stand the answering
sentence against its passage's others and against what retrieval brought, never against a copy
of itself. Plain functions over plain data: no model, no database."""

import json

from judges.corpus_questions import SectionChunk
from judges.teacher_questions import (
    SCHEMA,
    TeacherCache,
    answer_pairs,
    chunk_key,
    relevance_pairs,
    restates,
    sampled_chunks,
    split_held_out,
    teacher_messages,
    teacher_questions,
    validated,
)

WAL = SectionChunk(
    id=7, document_id=1, heading="Server configuration › wal_buffers",
    text="wal_buffers (integer). Sets the shared memory used for WAL data that has not been written to disk. "
    "The default setting of -1 selects a size equal to 1/32nd of shared_buffers. "
    "This parameter can only be set at server start.",
)  # fmt: skip


def reply(*pairs):
    return {"questions": [{"question": q, "sentence": s} for q, s in pairs]}


def test_a_question_is_kept_only_with_a_sentence_of_its_passage_that_says_something_it_does_not():
    seen = set()
    kept, dropped = validated(
        reply(
            ("What is the default size of wal_buffers?",
             "The default setting of -1 selects a size equal to 1/32nd of shared_buffers."),
            ("When can wal_buffers be changed?", "This parameter can only be set at server start"),  # no full stop
            ("What does max_connections limit?", "It limits connections."),  # not in the passage
            ("Can this parameter only be set at server start?", "This parameter can only be set at server start."),
            ("wal buffers", "This parameter can only be set at server start."),  # not a question
            ("How do I rotate the server's log files?",
             "The default setting of -1 selects a size equal to 1/32nd of shared_buffers."),  # another subject
            ("What is the default size of wal_buffers?",  # asked again
             "The default setting of -1 selects a size equal to 1/32nd of shared_buffers."),
            ("Which size does a wal_buffers of -1 give?", "Selects a size equal to 1/32nd of `shared_buffers`"),
            ("How do I set wal_buffers in Lumen?", "This parameter can only be set at server start."),
        ),
        WAL, seen,
    )  # fmt: skip
    assert [(q.question, q.answer.text) for q in kept] == [
        ("What is the default size of wal_buffers?",
         "The default setting of -1 selects a size equal to 1/32nd of shared_buffers."),
        ("When can wal_buffers be changed?", "This parameter can only be set at server start."),
        # A part of a sentence, its case and code ticks changed: the sentence that holds it answers.
        ("Which size does a wal_buffers of -1 give?",
         "The default setting of -1 selects a size equal to 1/32nd of shared_buffers."),
    ]  # fmt: skip
    assert dropped == {"sentence not in the passage": 1, "restates its sentence": 1, "not a question": 1,
                       "sentence about something else": 1, "asked before": 1,
                       "copied from the examples": 1}  # fmt: skip
    assert all(q.answer not in q.others and len(q.others) == 2 for q in kept)
    assert len(seen) == 3  # the collection's questions so far: the next passage cannot ask them again

    for broken in ([], "not json", {"questions": "none"}, {"questions": [42, {"question": 1}]}):
        kept, dropped = validated(broken, WAL, set())
        assert kept == [] and sum(dropped.values()) >= 1


def test_restating_is_saying_what_the_sentence_says_not_sharing_its_subject():
    sentence = "This parameter can only be set at server start."
    assert restates("Can this parameter only be set at server start?", sentence)
    assert not restates("When can wal_buffers be changed?", sentence)
    assert not restates("What is the default value of shared_buffers?", "The default value of shared_buffers is 128MB.")


def test_the_teacher_is_asked_under_a_schema_with_examples_of_another_product_then_the_passage():
    messages = teacher_messages(WAL)
    assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
    assert WAL.text in messages[-1]["content"] and WAL.heading in messages[-1]["content"]
    examples = [json.loads(m["content"]) for m in messages if m["role"] == "assistant"]
    assert examples and all(set(q) == {"question", "sentence"} for e in examples for q in e["questions"])
    assert "Lumen" in messages[1]["content"]  # a made-up product: no collection's questions steer it
    assert SCHEMA["properties"]["questions"]["items"]["required"] == ["question", "sentence"]


def test_the_sample_spreads_over_documents_and_sections_and_skips_passages_with_one_sentence():
    sentence = "This sentence has more than six words in it."
    chunks = [
        SectionChunk(i, i // 10, f"Page {i // 10} › Section {i % 5}", f"{sentence} {sentence}") for i in range(40)
    ]
    chunks.append(SectionChunk(99, 9, "Page 9 › Short", "One sentence only, but of enough words."))
    sample = sampled_chunks(chunks, 8)
    assert len(sample) == 8 and 99 not in {c.id for c in sample}
    assert {c.document_id for c in sample} == {0, 1, 2, 3}  # two from each of four documents, not eight of one
    assert all(len({c.heading for c in sample if c.document_id == d}) == 2 for d in range(4))
    assert sampled_chunks(chunks, 8) == sample  # seeded
    assert sampled_chunks(chunks, 12)[:8] == sample  # a larger sample asks the same passages first


def test_the_cache_resumes_and_a_changed_passage_is_asked_again(tmp_path):
    cache = TeacherCache(tmp_path / "teacher.jsonl")
    good = reply(("What is the default size of wal_buffers?",
                  "The default setting of -1 selects a size equal to 1/32nd of shared_buffers."))  # fmt: skip
    cache.add(WAL, good, model="qwen", seconds=9.5)
    again = TeacherCache(tmp_path / "teacher.jsonl")
    assert WAL in again and again.reply(WAL) == good
    moved = SectionChunk(8, 2, WAL.heading, WAL.text)  # re-ingested: new ids, same text
    assert moved in again and chunk_key(moved) == chunk_key(WAL)
    edited = SectionChunk(7, 1, WAL.heading, WAL.text.replace("-1", "0"))
    assert edited not in again
    questions, dropped = teacher_questions([WAL, edited], again)
    assert [q.question for q in questions] == ["What is the default size of wal_buffers?"] and not dropped


def test_pairs_put_the_answer_against_its_passage_and_retrieval_but_never_against_a_copy_of_itself():
    (question,), _ = validated(
        reply(("What is the default size of wal_buffers?",
               "The default setting of -1 selects a size equal to 1/32nd of shared_buffers.")),
        WAL, set(),
    )  # fmt: skip
    from corpus.strips import Strip

    mentions = Strip("shared_buffers sets the memory the server uses for shared memory buffers.")
    copy = Strip("The default setting of -1 selects a size equal to 1/32nd of shared_buffers, as said above.")
    pairs = list(answer_pairs([question], {question.question: [copy, mentions]}))
    assert pairs[0] == (question.question, question.answer.labelled, 1)
    negatives = [text for _, text, label in pairs if label == 0]
    assert len(negatives) == 3 and mentions.labelled in negatives
    assert copy.labelled not in negatives  # it states what the answer states: no negative

    other = SectionChunk(8, 1, "Server configuration › shared_buffers", "shared_buffers sets the memory. " * 3)
    holding = SectionChunk(9, 2, "Tuning", f"Tuning notes. {question.answer.text}")
    pairs = list(relevance_pairs([question], {WAL.id: WAL}, {question.question: [holding, other, WAL]}))
    assert pairs == [(question.question, WAL.text, 1), (question.question, question.answer.judged, 1),
                     (question.question, other.text, 0)]  # fmt: skip


def test_held_out_questions_come_from_passages_never_trained_on():
    chunks = [SectionChunk(i, 1, f"Entry {i}", f"Entry {i} is the {i}th entry of this list. It has a value of {i}.")
              for i in range(10)]  # fmt: skip
    questions = []
    for chunk in chunks:
        kept, _ = validated(
            reply((f"What value does entry {chunk.id} have?", f"It has a value of {chunk.id}."),
                  (f"Which entry of the list is entry {chunk.id}?", f"Entry {chunk.id} is the {chunk.id}th entry of this list.")),
            chunk, set(),
        )  # fmt: skip
        questions += kept
    train, held = split_held_out(questions, 0.2)
    assert len(held) == 4 and len(train) == 16
    assert not {q.chunk_id for q in train} & {q.chunk_id for q in held}
