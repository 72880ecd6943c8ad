"""The extractive generator: pure function, no model, no database."""

from pipeline.extractive import content_terms, extractive_answer

PASSAGES = [
    "The Eiffel Tower is in Paris. It was completed in 1889. Paris is the capital of France.",
    "The Statue of Liberty stands in New York. It was completed in 1886.",
    "The Eiffel Tower is in Paris. Gustave Eiffel's company built it.",
]


def test_content_terms_drop_stopwords_and_fold_plurals():
    # The fold is crude ("paris" -> "pari") but symmetric: questions and sentences fold alike.
    assert content_terms("When were the towers of Paris completed?") == {"tower", "pari", "completed"}
    assert content_terms("Paris has a tower") & content_terms("towers of Paris") == {"tower", "pari"}


def test_it_answers_with_cited_sentences_in_evidence_order():
    answer, cited = extractive_answer("When was the Eiffel Tower completed?", PASSAGES, max_sentences=2)
    assert answer == "The Eiffel Tower is in Paris. [1] It was completed in 1889. [1]"
    assert cited == [1]


def test_repeated_sentences_from_overlapping_evidence_appear_once():
    answer, cited = extractive_answer("Who built the Eiffel Tower in Paris?", PASSAGES, max_sentences=3)
    assert answer.count("The Eiffel Tower is in Paris.") == 1
    assert "Gustave Eiffel's company built it. [3]" in answer and cited == [1, 3]


def test_no_shared_word_means_no_answer():
    assert extractive_answer("How tall is Mount Everest?", PASSAGES) == ("", [])


def test_scored_strips_rank_by_relevance_even_without_a_shared_word():
    # The lexical ranking would pick the title sentence; the relevance evaluator's scores know
    # that "who sang" is answered by who recorded it.
    strips = [
        ('"It\'s Gonna Take a Miracle" is a song written by Teddy Randazzo.', 0.62),
        ("The first recording was a 1965 hit for The Royalettes.", 0.91),
    ]
    question = "Who sang it's gonna take a miracle?"
    assert "Royalettes" not in extractive_answer(question, [" ".join(s for s, _ in strips)], max_sentences=1)[0]
    answer, cited = extractive_answer(question, ["unused"], max_sentences=1, scored_strips=[strips])
    assert answer == "The first recording was a 1965 hit for The Royalettes. [1]" and cited == [1]
