"""The extractive answer's sentence choice: pure function, no model, no database (the scores stand
in for the answer judge's; tests/test_answer_path.py runs the judge itself)."""

from pipeline.extractive import answer_selection, content_terms

SETTINGS = {"accept": 0.88, "margin": 0.1, "max_sentences": 3}


def texts(chosen):
    return [(s.evidence_number, s.text) for s in chosen]


def test_content_terms_drop_stopwords_and_fold_plurals():
    # The fold is crude ("paris" -> "pari") but symmetric: questions and sentences fold alike.
    assert content_terms("When were the towers of Paris completed?") == {"tower", "pari", "completed"}
    assert content_terms("Paris has a tower") & content_terms("towers of Paris") == {"tower", "pari"}


def test_the_lead_passages_best_sentence_answers_and_close_neighbours_join_in_reading_order():
    lead = [("The Mona Lisa hangs in the Louvre.", 0.02), ("It was stolen in 1911 by Vincenzo Peruggia.", 0.95),
            ("It was recovered in 1913.", 0.30)]  # fmt: skip
    chosen = answer_selection([lead], **SETTINGS)
    assert texts(chosen) == [(1, lead[1][0]), (1, lead[2][0])]  # 0.30 >= 0.1 x 0.95; 0.02 is not


def test_a_sentence_from_another_verified_passage_never_pads_the_answer():
    lead = [("Nicklaus won the Masters six times.", 0.93)]
    unrelated = [("The song was written by two Eurovision songwriters.", 0.40)]
    assert texts(answer_selection([lead, unrelated], **SETTINGS)) == [(1, lead[0][0])]


def test_another_passage_joins_only_when_it_states_the_answer_at_least_as_well():
    lead = [("Real Madrid won the 2016 final.", 0.90)]
    second = [("Real Madrid won 5-3 on penalties at San Siro.", 0.97)]
    weaker = [("The final was played in Milan.", 0.89)]
    chosen = answer_selection([lead, second, weaker], **SETTINGS)
    assert texts(chosen) == [(1, lead[0][0]), (2, second[0][0])]


def test_repeated_sentences_from_overlapping_evidence_appear_once_and_the_count_is_capped():
    lead = [("A.", 0.9), ("B.", 0.8), ("C.", 0.7), ("D.", 0.6)]
    overlap = [("A.", 0.95)]
    chosen = answer_selection([lead, overlap], **SETTINGS)
    assert [s.text for s in chosen].count("A.") == 1 and len(chosen) == 3


def test_no_sentences_means_no_answer():
    assert answer_selection([], **SETTINGS) == [] and answer_selection([[]], **SETTINGS) == []
