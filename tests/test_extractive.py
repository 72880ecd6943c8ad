"""The extractive answer's sentence choice: pure function, no model, no database (the scores stand
in for the answer judge's; tests/test_generators.py runs the judge itself)."""

from pipeline.extractive import (
    Sentence,
    answer_selection,
    content_terms,
    lead_switch,
    making_room,
    others_joining,
)

SETTINGS = {"accept": 0.88, "margin": 0.1, "max_sentences": 3}


def texts(chosen):
    return [s.text for s in chosen]


def test_content_terms_drop_stopwords_and_fold_plurals():
    # The fold is crude ("paris" -> "pari") but symmetric: questions and sentences fold alike.
    assert content_terms("When were the towers of Paris completed?") == {"tower", "pari", "completed"}
    assert content_terms("Paris has a tower") & content_terms("towers of Paris") == {"tower", "pari"}


def test_the_best_sentence_answers_and_close_neighbours_join_in_reading_order():
    lead = [("The Mona Lisa hangs in the Louvre.", 0.02), ("It was stolen in 1911 by Vincenzo Peruggia.", 0.95),
            ("It was recovered in 1913.", 0.30)]  # fmt: skip
    assert texts(answer_selection(lead, **SETTINGS)) == [lead[1][0], lead[2][0]]  # 0.30 >= 0.1 x 0.95; 0.02 not


def test_a_sentence_that_leans_on_a_chosen_one_comes_with_it_before_weaker_ones():
    # The time module's page: the date is stated with "It", which the judge rates below sentences
    # that only mention the epoch; ranked with them, it lost its place under the cap of three.
    lead = [("The epoch is the point where the time starts.", 0.80), ("It is January 1, 1970 on all platforms.", 0.57),
            ("Seconds since the epoch exclude leap seconds.", 0.67),
            ("The functions may not handle dates before the epoch.", 0.81)]  # fmt: skip
    assert texts(answer_selection(lead, **SETTINGS)) == [lead[0][0], lead[1][0], lead[3][0]]
    far = [(text, 0.04 if text.startswith("It") else score) for text, score in lead]  # below the margin
    assert lead[1][0] not in texts(answer_selection(far, **SETTINGS))


def test_a_chosen_sentence_that_leans_back_brings_the_one_it_leans_on_first():
    lead = [("Security matters when users edit configuration.", 0.50),
            ("To limit it to named directives, use the AllowOverrideList directive.", 0.20),
            ("This lets you name individual directives that are permitted.", 0.90),
            ("Directives use the same syntax everywhere.", 0.60), ("Overrides apply to a directory.", 0.55)]  # fmt: skip
    chosen = texts(answer_selection(lead, **SETTINGS))
    # The antecedent first, though two sentences the judge rated higher are left out under the cap.
    assert chosen == [lead[1][0], lead[2][0], lead[3][0]]


def test_a_close_sentence_under_another_heading_does_not_pad_the_answer():
    # A manual's chunk holds the end of os.EOL and the start of the next function.
    lead = [("The operating system-specific end-of-line marker: \\r\\n on Windows.", 0.70),
            ("Always returns a value greater than zero.", 0.40), ("It is a string.", 0.30),
            ("Returns an estimate of the default amount of parallelism.", 0.95)]  # fmt: skip
    entries = ["os.EOL", "os.availableParallelism()", "os.EOL", "os.availableParallelism()"]
    chosen = texts(answer_selection(lead[:3], **SETTINGS, entries=entries[:3]))
    assert chosen == [lead[0][0], lead[2][0]]  # 0.40 is within the margin, but about another function
    best_entry = texts(answer_selection(lead, **SETTINGS, entries=entries))
    assert best_entry == [lead[1][0], lead[3][0]]  # the best's own section only


def test_a_sentence_of_another_entry_never_joins_even_when_the_judge_accepts_it():
    # A handbook's list of /etc's directories, an entry per item under one heading: the judge rates
    # the samba item close to the ssh one for "which file configures the SSH server?".
    lead = [("apache2: Apache web server configuration;", 0.90),
            ("samba: Samba file server configuration;", 0.51),
            ("ssh: the OpenSSH client and server configuration, sshd_config for the server;", 0.91),
            ("It is read by sshd at every start.", 0.20)]  # fmt: skip
    chosen = texts(answer_selection(lead, **SETTINGS, entries=[1, 2, 3, 3]))
    assert chosen == [lead[2][0], lead[3][0]]  # its own entry's sentence that leans on it, nothing else
    assert texts(answer_selection(lead, **SETTINGS))[0] == lead[0][0]  # read as one entry, apache2 padded it


def test_an_accepted_sentence_joins_whatever_the_margin_and_the_count_is_capped():
    lead = [("A one.", 0.99), ("B two.", 0.90), ("C three.", 0.89), ("D four.", 0.95)]
    assert texts(answer_selection(lead, **{**SETTINGS, "margin": 1.0})) == ["A one.", "B two.", "D four."]


def test_a_repeated_sentence_appears_once():
    lead = [("Nicklaus won six Masters.", 0.93), ("Nicklaus  won six Masters.", 0.93)]
    assert texts(answer_selection(lead, **SETTINGS)) == ["Nicklaus won six Masters."]


def test_no_sentences_means_no_answer():
    assert answer_selection([], **SETTINGS) == []


def test_the_cap_counts_sentences_not_strips():
    # A strip that joined a short fragment to its neighbour holds two sentences: the answer stays at three.
    lead = [("He won. It was in 1990 at Augusta.", 0.99), ("He won again. That was in 1995.", 0.95), ("C three.", 0.9)]
    chosen = texts(answer_selection(lead, **SETTINGS))
    assert chosen == ["He won. It was in 1990 at Augusta.", "C three."]


def test_another_passage_joins_only_with_a_sentence_rated_at_least_as_high_as_the_lead_best():
    chosen = [Sentence(0, "os.path.expanduser replaces an initial ~ with the home directory.", 0.93, n=1)]
    others = [Sentence(2, "On Windows, USERPROFILE is used if set.", 0.95, n=3),
              Sentence(0, "The 2016 Stanley Cup was won by the Penguins.", 0.92, n=4)]  # fmt: skip
    joined = others_joining(chosen, others, floor=0.03, max_sentences=3)
    assert [(s.n, s.text) for s in joined] == [(3, "On Windows, USERPROFILE is used if set.")]
    # Nothing joins an answer that states nothing (the lead's best is below the floor), nor past the cap.
    assert others_joining([Sentence(0, "Related.", 0.01, n=1)], [Sentence(0, "Café.", 0.02, n=2)], floor=0.03,
                          max_sentences=3) == []  # fmt: skip
    assert others_joining(chosen * 3, others, floor=0.03, max_sentences=3) == []


def test_a_passage_whose_sentence_the_judge_accepts_leads_when_none_of_the_lead_is_accepted():
    lead = [Sentence(0, "The module defines the following items.", 0.82, n=1)]
    others = [Sentence(0, "The directory named by the TMPDIR environment variable.", 0.91, n=2),
              Sentence(1, "A third sentence.", 0.95, n=5)]  # fmt: skip
    assert lead_switch(lead, others, accept=0.88) == 5
    assert lead_switch(lead, others, accept=0.96) is None  # no other sentence is accepted either
    assert lead_switch([Sentence(0, "Accepted.", 0.9, n=1)], others, accept=0.88) is None  # the lead answers


def test_a_far_better_sentence_of_another_passage_takes_the_place_of_the_lead_weakest():
    # The lead filled the answer with sentences the judge doubts; another passage states the answer.
    lead = [Sentence(0, "The curses module supports basic curses features.", 0.23, n=1),
            Sentence(1, "There is no curses module for Windows.", 0.13, n=1),
            Sentence(2, "BSD curses is not supported.", 0.12, n=1)]  # fmt: skip
    ported = Sentence(4, "A ported version called UniCurses is available.", 0.75, n=2)
    kept = making_room(lead, [ported], accept=0.88, floor=0.03, max_sentences=3)
    assert [s.score for s in kept] == [0.23, 0.13]  # the weakest made room
    answer = kept + others_joining(kept, [ported], floor=0.03, max_sentences=3)
    assert answer[-1] == ported
    # Not when the other is merely better (0.5 < 2.5 x 0.23), nor when the lead states an answer.
    merely = Sentence(4, "Windows users may look elsewhere.", 0.5, n=2)
    assert making_room(lead, [merely], accept=0.88, floor=0.03, max_sentences=3) == lead
    accepted = [Sentence(0, "It is available as UniCurses.", 0.3, n=1)] * 3  # a judge calibrated low accepts it
    assert making_room(accepted, [ported], accept=0.2, floor=0.03, max_sentences=3) == accepted


def test_when_the_lead_gives_way_whole_the_answer_is_the_other_passage_never_nothing():
    """A 500 ("max() arg is an empty sequence"): the lead's every sentence made room for another
    passage's three-sentence strip, which then did not join an answer of nothing chosen."""
    lead = [Sentence(0, "The server reads its configuration at start.", 0.1, n=1),
            Sentence(1, "Settings are case-insensitive.", 0.05, n=1)]  # fmt: skip
    three = Sentence(3, "The default is one second. It may be changed. A restart is not needed.", 0.6, n=2)
    kept = making_room(lead, [three], accept=0.88, floor=0.03, max_sentences=3)
    assert kept == [] and others_joining(kept, [three], floor=0.03, max_sentences=3) == [three]
    four = Sentence(3, "One. Two. Three. Four.", 0.6, n=2)  # would not fit even alone: the lead stays
    assert making_room(lead, [four], accept=0.88, floor=0.03, max_sentences=3) == lead
