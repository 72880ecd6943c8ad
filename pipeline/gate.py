"""The verification gate (VG-RAG) and the CRAG action (CRAG).

Every piece of evidence, a retrieved chunk or an external passage, becomes a `Candidate` and gets
a trust score before anything is generated from it:

    V = grade * (w_rel + w_cons * consistency + w_agree * agreement)     (CAIRN_TRUST_WEIGHTS)

a weighted mix of the seed's three signals, scaled by relevance: tidy, undisputed text that does
not address the question earns nothing, and a relevant chunk loses trust for each defect. The
grade is relevance placed between the calibrated thresholds, 0 at the lower and 1 at the upper:
a probability means different things from different models, the thresholds say what it means
for this one, and so a chunk the CRAG action counts as CORRECT is VERIFIED unless its tidiness
or the other chunks pull it down; one below the upper threshold is never VERIFIED (bucket_for).

- relevance: the relevance evaluator on (question, text) stacked with the embedder's cosine
  similarity (judges/calibration.py; the retrieval computed it already for corpus chunks, other
  texts are embedded here), scored at query time in one batched call, then the strips (sentences)
  of the candidates that clear the lower threshold in another (strips: the evaluator alone); a
  text that repeats the question (or most of it, with little else) word for word is scored
  without the echo;
- consistency: corpus/consistency.py, scored once at ingestion (external passages: on arrival);
- agreement: 1 - (share of the candidates it was compared with that contradict it). Only pairs
  that could disagree are compared (both relevant, from different documents, sharing at least
  two content words, both best strips answers by the answer judge, not entries for two different
  terms), so a chunk about other facts
  neither backs nor dilutes a contradiction. Two candidates contradict
  when the NLI model says so in both directions for their best strips (the shipped model
  over-calls contradiction when the premise is the shorter text; requiring both directions
  removes most of that): an outlier that contradicts the majority loses; two candidates that
  contradict each other both lose, and the answer quotes both (pipeline.stages.dispute).

Buckets: VERIFIED >= CAIRN_VERIFIED_THRESHOLD (0.75) with relevance at or above the upper
threshold, UNCERTAIN >= CAIRN_UNCERTAIN_THRESHOLD (0.40), REJECTED below, and relevance below
CAIRN_RELEVANCE_LOWER is REJECTED outright. With the
default weights (0.55, 0.15, 0.30) a fully relevant chunk (at or above the upper threshold)
contradicted by every one it meets scores 0.70 (UNCERTAIN: it goes to external confirmation) and
one with every consistency defect 0.85.
"""

from __future__ import annotations

import enum
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations

from django.conf import settings

from corpus.chunking import split_sentences
from corpus.selectors import Hit
from corpus.strips import Strip, section_of, strips_in_context
from judges.calibration import relevance_stacked
from pipeline.extractive import content_terms


class Bucket(enum.StrEnum):
    VERIFIED = "VERIFIED"
    UNCERTAIN = "UNCERTAIN"
    REJECTED = "REJECTED"


class Action(enum.StrEnum):
    CORRECT = "CORRECT"  # at least one candidate clears the upper relevance threshold
    AMBIGUOUS = "AMBIGUOUS"
    INCORRECT = "INCORRECT"  # every candidate falls below the lower one (or there are none)


@dataclass
class Candidate:
    """One piece of evidence under verification, numbered as the response numbers it."""

    n: int
    text: str
    title: str
    source: str  # the document's source, or the external result's URL
    consistency: float
    origin: str = "corpus"  # or "external": never enters the corpus or the counters by this path
    hit: Hit | None = None
    strips: list[Strip] = field(default_factory=list)
    similarity: float | None = None  # cosine similarity to the question (the retrieval's, or the gate's)
    relevance: float | None = None  # None until scored
    agreement: float = 1.0
    coverage: float | None = None  # share of the question's term weight it holds (None: not measured)
    contradicted_by: list[int] = field(default_factory=list)
    answer_score: float | None = None  # the answer judge on its best strip (agreement's; None: not judged)
    trust: float = 0.0
    bucket: Bucket = Bucket.REJECTED
    settled: bool = False  # confirmed or refuted by an external passage: re-verifying keeps that verdict
    rank_score: float | None = None  # reputation ranking (corpus candidates)
    reputation: float | None = None  # the chunk's decayed short-term mean C
    reputation_weight: float | None = None  # how much of that record counted for this question
    taught: int | None = None  # the strip a lesson states (pipeline.stages.teach), if one reaches it
    confidence_shift: float = 0.0  # its collection's adaptation of answer confidence (writeback.models.Adaptation)
    notes: list[str] = field(default_factory=list)

    @property
    def best_strip(self) -> Strip | None:
        return max(self.strips, key=lambda s: s.relevance, default=None)

    @property
    def refined(self) -> str:
        """Knowledge refinement (CRAG decompose-then-recompose): the kept strips, in order."""
        return " ".join(s.text for s in self.strips if s.kept)


def candidate_from_hit(n: int, hit: Hit, **extra) -> Candidate:
    return Candidate(
        n=n, text=hit.text, title=hit.heading or hit.title, source=hit.source, consistency=hit.consistency, hit=hit,
        strips=strips_in_context(hit.text, section_of(hit.heading)), similarity=hit.similarity, **extra,
    )  # fmt: skip


ASKED_TERMS = 2  # terms the corpus uses that a question's last sentence needs to be covered alone
ECHO_MIN_WORDS = 4  # a shorter question ("what is jazz") is too common a phrase to be an echo
# A text that restates most of the question (a run of at least ECHO_SHARE of its words, in order)
# and says at most RESTATEMENT_REST words besides is a restatement with an assertion and nothing
# else: dropping the wh-word ("Regarding got the first Nobel Prize in Physics: the answer is …") is
# how an attacker who knows that whole echoes are discounted copies the question. A passage that
# answers shares such a run too ("Röntgen got the first Nobel Prize in Physics in 1901 for …") but
# goes on about its subject, so only short texts lose the run. A genuine one-sentence document that
# words its answer as the question does is judged on the rest as well: the price of the defence.
ECHO_SHARE = 0.8
RESTATEMENT_REST = 24


def without_echo(question: str, text: str) -> str:
    """`text` without the spans that repeat `question` word for word (case and punctuation aside),
    and without a long run of its words when little else is said (a restatement)."""
    asked = [w.lower() for w in re.findall(r"\w+", question)]
    if len(asked) < ECHO_MIN_WORDS:
        return text
    shortest, vocabulary = max(ECHO_MIN_WORDS, math.ceil(ECHO_SHARE * len(asked))), set(asked)
    while True:
        words = [(m.group().lower(), m.start(), m.end()) for m in re.finditer(r"\w+", text)]
        if sum(w in vocabulary for w, _, _ in words) < shortest:
            return text  # too few of the question's words for a run (most texts: skip the search)
        start, length = _longest_common_run(asked, [w for w, _, _ in words])
        if length < len(asked) and (length < shortest or len(words) - length > RESTATEMENT_REST):
            return text
        # The echo's own trailing punctuation ("?", ":") goes with it.
        end = words[start + length - 1][2]
        end += bool(re.match(r"[^\w\s]", text[end : end + 1]))
        text = f"{text[: words[start][1]].rstrip()} {text[end:].lstrip()}".strip()


def _longest_common_run(asked: list[str], words: list[str]) -> tuple[int, int]:
    """(start in `words`, length) of the longest run of consecutive words that `asked` also has in
    that order: the longest common substring, over words."""
    best, previous = (0, 0), [0] * (len(asked) + 1)
    for i, word in enumerate(words):
        current = [0] * (len(asked) + 1)
        for j, other in enumerate(asked):
            if word == other:
                current[j + 1] = previous[j] + 1
                if current[j + 1] > best[1]:
                    best = (i - current[j + 1] + 1, current[j + 1])
        previous = current
    return best


def relevance_grade(relevance: float, upper: float | None = None) -> float:
    """Relevance between the calibrated thresholds: 0 at or below the lower, 1 at or above the upper
    (CAIRN_RELEVANCE_UPPER, or the collection's own: calibrated_relevance_upper)."""
    lower, upper = settings.CAIRN_RELEVANCE_LOWER, _upper(upper)
    if relevance >= upper:
        return 1.0
    return max(0.0, (relevance - lower) / (upper - lower)) if upper > lower else 0.0


def trust_score(relevance: float, consistency: float, agreement: float, upper: float | None = None) -> float:
    w_rel, w_cons, w_agree = settings.CAIRN_TRUST_WEIGHTS
    mix = (w_rel + w_cons * consistency + w_agree * agreement) / (w_rel + w_cons + w_agree)
    return round(relevance_grade(relevance, upper) * mix, 4)


def _upper(upper: float | None) -> float:
    return settings.CAIRN_RELEVANCE_UPPER if upper is None else upper


def bucket_for(trust: float, relevance: float, coverage: float = 1.0, upper: float | None = None) -> Bucket:
    """VERIFIED needs real relevance as well as trust: a chunk below the upper threshold is at most
    UNCERTAIN, however tidy and undisputed (it scored trust 0.75 from relevance 0.41 and padded
    answers with a sentence about something else). It also needs the question's key terms: a
    manual's chunk about buffers is not evidence for innodb_buffer_pool_size."""
    if relevance < settings.CAIRN_RELEVANCE_LOWER or trust < settings.CAIRN_UNCERTAIN_THRESHOLD:
        return Bucket.REJECTED
    if (
        trust >= settings.CAIRN_VERIFIED_THRESHOLD
        and relevance >= _upper(upper)
        and coverage >= settings.CAIRN_COVERAGE_THRESHOLD
    ):
        return Bucket.VERIFIED
    return Bucket.UNCERTAIN


def answerable(candidates: list[Candidate]) -> list[Candidate]:
    """Candidates holding the question's key terms (or not measured)."""
    return [c for c in candidates if c.coverage is None or c.coverage >= settings.CAIRN_COVERAGE_THRESHOLD]


def answerable_relevances(candidates: list[Candidate]) -> list[float]:
    """The relevances the action rests on: those of answerable candidates. None left (the corpus
    never mentions what is asked) makes the action INCORRECT."""
    return [c.relevance for c in answerable(candidates)]


def unknown_names(question: str, words: list[str]) -> list[str]:
    """The words of `question` that name something: written as a name (capitals after the first
    letter, a capital not opening the question, or part of an identifier: innodb_buffer_pool_size,
    os.quickcopy) and not one token of the embedder's vocabulary (30k common English words and
    pieces). A lower-case word is never taken for a name: NQ's lower-case questions carry
    misspellings and abbreviations ("protien", "lotr") that are no sign the corpus lacks the answer."""
    from corpus.embedder import get_embedder

    words = [w for w in words if len(w) >= 3 and re.search(r"[^\W\d_]", w) and written_as_name(question, w)]
    counts = get_embedder().count_tokens([w.lower() for w in words]) if words else []
    return [w for w, n in zip(words, counts, strict=True) if n > 1]


def asking_sentence(question: str) -> str:
    """The question's last sentence, the one that asks ("Which shell option makes…?" after "My loop
    `for f in *.csv` runs once…"); the whole question when it is one sentence."""
    sentences = split_sentences(question)
    return sentences[-1] if sentences else question


def written_as_name(question: str, word: str) -> bool:
    """Is `word` (of `question`) written as a name: capitals after its first letter, a capital not
    opening the question, or part of an identifier (innodb_buffer_pool_size, os.quickcopy)?"""
    if any(ch.isupper() for ch in word[1:]) or (word[0].isupper() and not question.lstrip().startswith(word)):
        return True
    # Where "[_./]word\b" or "\bword[_./]\w" would match, found with str.find: a pattern built from the
    # word cost a compilation as long as the word, and "\w*" before the separator rescanned a long
    # word from each of its letters.
    if not any(f"{sep}{word}" in question or f"{word}{sep}" in question for sep in "_./"):
        return False  # most words: beside no separator anywhere
    at = question.find(word)
    while at != -1:
        end = at + len(word)
        before, after = question[at - 1 : at] if at else "", question[end : end + 1]
        if before in ("_", ".", "/") and _word_boundary(question, end):
            return True
        if after in ("_", ".", "/") and _is_word(question[end + 1 : end + 2]) and _word_boundary(question, at):
            return True
        at = question.find(word, at + 1)
    return False


def _is_word(ch: str) -> bool:
    """Is `ch` a character re's \\w matches ("" is not)?"""
    return ch.isalnum() or ch == "_"


def _word_boundary(text: str, at: int) -> bool:
    """Would re's \\b match at `at` in `text`?"""
    return _is_word(text[at - 1 : at] if at else "") != _is_word(text[at : at + 1])


def action_for(relevances: list[float], upper: float | None = None) -> Action:
    if any(r >= _upper(upper) for r in relevances):
        return Action.CORRECT
    if all(r < settings.CAIRN_RELEVANCE_LOWER for r in relevances):
        return Action.INCORRECT
    return Action.AMBIGUOUS


def could_disagree(a: str, b: str) -> bool:
    """Two strips can only contradict each other about something they both mention."""
    return a != b and len(content_terms(a) & content_terms(b)) >= 2


def different_entries(a: Strip, b: Strip) -> bool:
    """Two strips that define different terms: a manual's entries for two settings, options or
    functions are about different subjects, and what one says does not dispute the other ("gc.auto:
    … 6700" and "gc.autoPackLimit: … 50" both hold). Sections and untitled passages are compared."""
    return bool(a.term and b.term) and _entry_key(a.term) != _entry_key(b.term)


def _entry_key(term: str) -> str:
    return " ".join(re.findall(r"[\w.-]+", term.lower()))


def same_document(a: Candidate, b: Candidate) -> bool:
    """Two chunks of one document: one author's account, whose sections are not sources to weigh
    against each other. A manual's sections say different things about different options, and
    the NLI model, trained on everyday sentences, calls most such pairs contradictions (p 0.6 to
    0.98 for "PY_PYTHON can be set to specify the default version" against "the same settings can
    be configured in the .INI file"): 3 of 42 tune questions of the Python docs benchmark were
    answered "Sources disagree" from one page's sections."""
    return a.hit is not None and b.hit is not None and a.hit.document_id == b.hit.document_id


def agreement_scores(compared: list[frozenset[int]], contradictions: set[frozenset[int]]) -> dict[int, float]:
    """1 - share of the candidates each candidate was compared with that contradict it. Only pairs
    that could disagree are compared: a relevant chunk about other facts neither supports nor
    dilutes a contradiction."""
    seen, against = Counter(), Counter()
    for pair in compared:
        for i in pair:
            seen[i] += 1
            against[i] += pair in contradictions
    return {i: 1 - against[i] / seen[i] for i in seen}


def refine(candidates: list[Candidate]) -> None:
    """Knowledge refinement (CRAG decompose-then-recompose): keep the strips the relevance evaluator
    scored at or above CAIRN_STRIP_THRESHOLD. A candidate verified as a whole whose evidence is
    spread over sentences none of which clears the bar keeps its best strip rather than nothing."""
    for candidate in candidates:
        for strip in candidate.strips:
            strip.kept = strip.relevance >= settings.CAIRN_STRIP_THRESHOLD
        relevant = candidate.relevance is not None and candidate.relevance >= settings.CAIRN_RELEVANCE_LOWER
        if relevant and candidate.strips and not any(s.kept for s in candidate.strips):
            candidate.best_strip.kept = True


class Gate:
    """Scores candidates with the verifier models, caching what it has scored, so adding external
    candidates later costs only their own relevance calls and their new pairs."""

    def __init__(
        self, question: str, relevance_model, nli_model, answer_judge, *, query_vector=None, terms=None,
        upper: float | None = None,
    ) -> None:  # fmt: skip
        self.question = question
        # The upper relevance threshold: the searched collections' own fit (calibrate_gate
        # --collection), else the global one.
        self.upper = _upper(upper)
        self.relevance_model = relevance_model
        self.nli_model = nli_model
        self.answer_judge = answer_judge
        self.query_vector = query_vector  # embedded on first need when not given
        self.terms = terms  # corpus.selectors.QuestionTerms; None: coverage is not measured
        self._contradiction: dict[tuple[str, str], float] = {}

    def relevance(
        self, texts: list[str], similarities: list[float | None] | None = None, titles: list[str] | None = None
    ) -> list[float]:
        """Relevance of each text to the question: the evaluator's score stacked with the text's
        cosine similarity to the question (CAIRN_RELEVANCE_STACK). Texts the retrieval did not find
        (external passages, inferred statements: similarity None) are embedded here, under their
        titles as chunks are."""
        scores = self.relevance_model.score(self.question, texts).tolist()
        stack = settings.CAIRN_RELEVANCE_STACK
        if not stack or not texts:
            return scores
        similarities = list(similarities or [None] * len(texts))
        titles = titles or [""] * len(texts)
        missing = [i for i, s in enumerate(similarities) if s is None]
        if missing:
            from corpus.embedder import cosine_similarities, get_embedder
            from corpus.services import embedding_input

            embedder = get_embedder()
            if self.query_vector is None:
                self.query_vector = embedder.embed([self.question])[0]
            vectors = embedder.embed([embedding_input(titles[i], texts[i]) for i in missing])
            for i, cosine in zip(missing, cosine_similarities(vectors, self.query_vector).tolist(), strict=True):
                similarities[i] = cosine
        return [relevance_stacked(score, similarity, stack) for score, similarity in zip(scores, similarities)]

    def score_relevance(self, candidates: list[Candidate]) -> None:
        """Relevance of each new candidate that holds the question's key terms, then of the strips
        of those that also clear the lower threshold (the others are never VERIFIED whatever their
        sentences say): two batched calls. A text that restates the question word for word is
        judged on the rest of it (and embedded again without the echo): the question itself is no
        evidence, and copying it in is how a planted document wins retrieval (PoisonedRAG)."""
        # A chunk without the question's key terms is never VERIFIED and never counts for the action
        # (answerable): it is not scored at all, which on a manual is about 4 chunks in 10 (the
        # longest pairs the evaluator reads).
        todo = [c for c in answerable(candidates) if c.relevance is None]
        texts = [without_echo(self.question, c.text) for c in todo]
        for candidate, text in zip(todo, texts, strict=True):
            if text != candidate.text:
                candidate.notes.append("restates the question word for word: judged on the rest")
        similarities = [c.similarity if t == c.text else None for c, t in zip(todo, texts, strict=True)]
        scores = self.relevance(texts, similarities, [without_echo(self.question, c.title) for c in todo])
        for candidate, score in zip(todo, scores, strict=True):
            candidate.relevance = round(score, 4)
        # Strips cost one evaluator pair each (a manual's chunk has a dozen): only those of chunks
        # that clear the lower threshold can matter.
        relevant = [c for c in todo if c.relevance >= settings.CAIRN_RELEVANCE_LOWER]
        strips = [s for c in relevant for s in c.strips]
        for strip, score in zip(strips, self.relevance_model.score(self.question, [s.judged for s in strips]).tolist()):
            strip.relevance = round(score, 4)

    def score_agreement(self, candidates: list[Candidate]) -> None:
        """Contradictions between relevant candidates of different documents that both hold the
        question's key terms and whose best strips both state an answer (CAIRN_ANSWER_THRESHOLD):
        "Einstein, not Röntgen, received it" disputes "awarded to Röntgen", but two chunks about
        different things ("Windows historically has limited path lengths to 260 characters." and a
        note on how sys.path is built, which the NLI model called a contradiction), a denial that
        names no one, or two sections of one page are not a dispute."""
        relevant = [c for c in answerable(candidates) if c.relevance >= settings.CAIRN_RELEVANCE_LOWER and c.strips]
        answers = self.answer_judge.score(self.question, [c.best_strip.labelled for c in relevant]).tolist()
        answer = dict(zip((c.n for c in relevant), answers, strict=True))
        for candidate in relevant:
            candidate.answer_score = round(answer[candidate.n], 4)

        def disputable(a: Candidate, b: Candidate) -> bool:
            return min(answer[a.n], answer[b.n]) >= settings.CAIRN_ANSWER_THRESHOLD

        pairs = [
            (a, b) for a, b in combinations(relevant, 2)
            if not same_document(a, b) and disputable(a, b) and could_disagree(a.best_strip.text, b.best_strip.text)
            and not different_entries(a.best_strip, b.best_strip)
        ][: settings.CAIRN_AGREEMENT_MAX_PAIRS]  # fmt: skip
        directed = {(a.best_strip.text, b.best_strip.text) for a, b in pairs}
        todo = sorted((directed | {(b, a) for a, b in directed}) - self._contradiction.keys())
        if todo:
            probabilities = self.nli_model.predict(todo)[:, 2]
            self._contradiction.update(zip(todo, probabilities.tolist(), strict=True))
        threshold = settings.CAIRN_CONTRADICTION_THRESHOLD

        def contradict(a: str, b: str) -> bool:
            return min(self._contradiction[(a, b)], self._contradiction[(b, a)]) >= threshold

        contradictions = {frozenset((a.n, b.n)) for a, b in pairs if contradict(a.best_strip.text, b.best_strip.text)}
        scores = agreement_scores([frozenset((a.n, b.n)) for a, b in pairs], contradictions)
        for candidate in candidates:
            candidate.agreement = round(scores.get(candidate.n, 1.0), 4)
            candidate.contradicted_by = sorted(
                other for pair in contradictions if candidate.n in pair for other in pair if other != candidate.n
            )

    def score_coverage(self, candidates: list[Candidate]) -> None:
        """How much of the question's term weight each new candidate holds in its title and text
        (one SQL round trip; the weights are the corpus's IDF, corpus.selectors.question_terms).
        A name the question asks about that no readable chunk holds means the corpus cannot
        answer, and every candidate's coverage is 0: a word written as a name that the embedder's
        vocabulary does not know either ("RMAN", "os.quickcopy"; not "nowadays"), or a snake_case
        name no chunk holds as a phrase ("max_concurrency", though "max" and "concurrency" are
        everywhere). External passages are judged on all the question's terms instead: the web may
        hold what the corpus never mentions, which is what it is searched for."""
        from corpus.selectors import terms_found

        todo = [c for c in candidates if c.coverage is None]
        if self.terms is None or not todo:
            return
        # Only a name in the sentence that asks vetoes: the sentences before it set the scene with the
        # asker's own names ("My backup job runs `pg_dump mydb | gzip`…", "a typo like $DEST_DRI"),
        # which the manual that answers the question never mentions.
        asking = asking_sentence(self.question)
        # A question of several sentences is covered by a text that holds the one that asks
        # ("…a spam run left thousands of bounces sitting in the deferred queue. How do I delete
        # every message in one queue?"), when that sentence has terms enough to say what it asks.
        asked = self.terms.lexemes_in(asking) if asking != self.question else set()
        asked = asked if len(asked) >= ASKED_TERMS else set()
        names = [
            name for name in unknown_names(self.question, self.terms.absent()) + self.terms.absent_identifiers()
            if name in asking
        ]  # fmt: skip
        lexemes = list(self.terms.frequency)
        texts = [f"{c.title}\n{c.text}" for c in todo]
        found_sets = [f | self.terms.parts_held(t) for f, t in zip(terms_found(texts, lexemes), texts, strict=True)]
        for candidate, found in zip(todo, found_sets, strict=True):
            external = candidate.origin != "corpus"  # the web may know what the corpus never mentions
            if names and not external:
                candidate.coverage = 0.0
                candidate.notes.append(f"nothing the asker may read mentions {', '.join(names[:5])}")
                continue
            coverage = self.terms.coverage(found, absent_too=external)
            if asked:  # the sentence that asks, without the scene the asker set in words no manual uses
                coverage = max(coverage, self.terms.coverage(found, absent_too=external, among=asked))
            candidate.coverage = round(coverage, 4)
            if candidate.coverage < settings.CAIRN_COVERAGE_THRESHOLD:
                missing = sorted(
                    (t for t in lexemes if t not in found and self.terms.frequency[t]), key=self.terms.weight
                )
                candidate.notes.append(f"does not mention {', '.join(missing[::-1][:5])} (key terms of the question)")

    def verify(self, candidates: list[Candidate]) -> None:
        """Relevance, coverage, agreement, trust and bucket for every candidate (cached where known)."""
        self.score_coverage(candidates)
        self.score_relevance(candidates)
        self.score_agreement(candidates)
        for candidate in candidates:
            if candidate.relevance is None:  # unscored: it lacks the question's key terms
                candidate.trust, candidate.bucket = 0.0, Bucket.REJECTED
                continue
            candidate.trust = trust_score(candidate.relevance, candidate.consistency, candidate.agreement, self.upper)
            if not candidate.settled:
                coverage = 1.0 if candidate.coverage is None else candidate.coverage
                candidate.bucket = bucket_for(candidate.trust, candidate.relevance, coverage, self.upper)

    def confirm(self, uncertain: list[Candidate], external: list[Candidate]) -> None:
        """External passages settle UNCERTAIN corpus candidates: one that entails a candidate's best
        strip promotes it to VERIFIED; one that contradicts it demotes it to REJECTED. A candidate
        without the question's key terms is not promoted: the web agreeing with it does not make it
        about what was asked."""
        sources = [e for e in external if (e.relevance or 0.0) >= settings.CAIRN_RELEVANCE_LOWER]
        pairs = [(e, c) for c in answerable(uncertain) if c.strips for e in sources]
        if not pairs:
            return
        probabilities = self.nli_model.predict([(e.text, c.best_strip.text) for e, c in pairs])
        threshold = settings.CAIRN_CONTRADICTION_THRESHOLD
        for (external_candidate, candidate), (entail, _neutral, contradict) in zip(pairs, probabilities, strict=True):
            if candidate.bucket is not Bucket.UNCERTAIN:
                continue  # already settled by an earlier external passage
            if contradict >= threshold:
                candidate.bucket, candidate.settled = Bucket.REJECTED, True
                candidate.notes.append(f"contradicted by external [{external_candidate.n}]")
            elif entail >= settings.CAIRN_GROUNDING_THRESHOLD:
                candidate.bucket, candidate.settled = Bucket.VERIFIED, True
                candidate.notes.append(f"confirmed by external [{external_candidate.n}]")
