"""Relevance pairs: answer strips, hard negatives mined by the real hybrid retrieval, no trace left."""

import pytest

from corpus.models import Collection, Document
from judges.relevance_data import (
    Mined,
    RelevanceExample,
    answer_strip,
    closest_sentence,
    mine_hard_negatives,
    relevance_pairs,
)

EXAMPLES = [
    RelevanceExample(
        "when did the eiffel tower open",
        "The Eiffel Tower is a lattice tower in Paris. It opened to the public in 1889 for the World's Fair.",
        ("1889",),
        "Eiffel Tower",
    ),
    RelevanceExample(
        "who designed the eiffel tower",
        "Gustave Eiffel's company designed and built the tower. Critics at first called it an eyesore.",
        ("Gustave Eiffel",),
        "Eiffel Tower design",
    ),
    RelevanceExample(
        "how tall is the statue of liberty",
        "The Statue of Liberty in New York Harbor stands 93 metres tall including its pedestal.",
        ("93 metres",),
        "Statue of Liberty",
    ),
]


def test_answer_strip_and_closest_sentence():
    assert answer_strip(EXAMPLES[0]) == "It opened to the public in 1889 for the World's Fair."
    assert answer_strip(RelevanceExample("q", "No answer here.", ("1889",))) is None
    assert closest_sentence("who called it an eyesore", EXAMPLES[1].passage) == "Critics at first called it an eyesore."


def test_pairs_hold_positives_hard_negatives_and_strips():
    pairs = relevance_pairs(EXAMPLES[:1], {0: Mined(similarity=0.8, negatives=[(EXAMPLES[1].passage, 0.6)])})
    assert [(p.label, p.kind) for p in pairs] == [(1, "passage"), (0, "passage"), (1, "strip"), (0, "strip")]
    assert [p.similarity for p in pairs] == [0.8, 0.6, None, None]
    assert pairs[2].text == "It opened to the public in 1889 for the World's Fair."


@pytest.mark.django_db
def test_mining_uses_hybrid_retrieval_skips_gold_and_answer_bearing_passages_and_leaves_no_trace():
    before = (Collection.objects.count(), Document.objects.count())
    mined = mine_hard_negatives(EXAMPLES, per_question=2)
    assert (Collection.objects.count(), Document.objects.count()) == before
    negatives = {index: [text for text, _ in found.negatives] for index, found in mined.items()}
    # The two Eiffel questions find each other's passage first; never their own.
    assert negatives[0][0] == EXAMPLES[1].passage
    assert negatives[1][0] == EXAMPLES[0].passage
    for index, example in enumerate(EXAMPLES):
        assert example.passage not in negatives[index]
        assert all(
            answer.lower() not in negative.lower() for negative in negatives[index] for answer in example.answers
        )
        # Similarities are the retrieval's: the gold passage is closer to its question than its negatives.
        assert all(mined[index].similarity > similarity for _, similarity in mined[index].negatives)
