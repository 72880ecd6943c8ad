"""The answer judge's data: the sentence holding a SQuAD answer is the positive, its paragraph's
other sentences the hard negatives, and articles never straddle the train/held-out split."""

import json

from judges.answer_data import gold_passage_pairs, qnli_pairs, squad_pairs
from judges.relevance_data import RelevanceExample

CONTEXT = (
    "The Aurora project started in 2019. It is led by Dr. Mira Okafor of the research division. "
    "Its budget is 4.2 million euros. The project team meets on Mondays."
)


def squad_file(tmp_path):
    start = CONTEXT.index("Dr. Mira Okafor")
    data = {"data": [{"title": "Aurora", "paragraphs": [{"context": CONTEXT, "qas": [
        {"id": "q1", "question": "Who leads the Aurora project?", "is_impossible": False,
         "answers": [{"text": "Dr. Mira Okafor", "answer_start": start}]},
        {"id": "q2", "question": "Who funds the Aurora project?", "is_impossible": True, "answers": []},
    ]}]}]}  # fmt: skip
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data))
    return path


def test_the_sentence_holding_the_answer_is_the_positive_and_its_neighbours_the_negatives(tmp_path):
    pairs, article_of = squad_pairs(squad_file(tmp_path), "squad2")
    answerable = [p for p in pairs if p.question == "Who leads the Aurora project?"]
    assert [(p.text, p.label) for p in answerable if p.label] == [
        ("It is led by Dr. Mira Okafor of the research division.", 1)
    ]
    negatives = [p.text for p in answerable if not p.label]
    assert len(negatives) == 3 and "It is led by Dr. Mira Okafor of the research division." not in negatives
    unanswerable = [p for p in pairs if p.question == "Who funds the Aurora project?"]
    assert len(unanswerable) == 2 and all(p.label == 0 and p.source == "squad2-unanswerable" for p in unanswerable)
    assert {p.group for p in pairs} == {"article:Aurora"} and article_of[
        "Who leads the Aurora project?"
    ] == "article:Aurora"


def test_qnli_rows_take_the_article_of_their_question_when_known(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text(
        "index\tquestion\tsentence\tlabel\n"
        "0\tWho leads the Aurora project?\tIt is led by Dr. Mira Okafor.\tentailment\n"
        "1\tWhat is a quark?\tQuarks combine to form hadrons.\tnot_entailment\n"
    )
    known, unknown = qnli_pairs(path, {"Who leads the Aurora project?": "article:Aurora"})
    assert (known.group, known.label) == ("article:Aurora", 1)
    assert (unknown.group, unknown.label) == ("qnli:What is a quark?", 0)


def test_a_gold_passage_gives_its_answer_sentences_as_positives():
    example = RelevanceExample("Who leads the Aurora project?", CONTEXT, ("Mira Okafor",))
    pairs = gold_passage_pairs([example], "nq")
    assert [p.text for p in pairs if p.label] == ["It is led by Dr. Mira Okafor of the research division."]
    assert len([p for p in pairs if not p.label]) == 3
    assert gold_passage_pairs([RelevanceExample("q?", CONTEXT, ("nowhere",))], "nq") == []  # teaches nothing
