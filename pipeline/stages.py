"""The forward path: an ordered list of stages over one `QueryState` (../shared/DESIGN.md).

    rewrite -> embed_query -> retrieve -> rank -> verify -> correct -> refine -> recall -> generate -> record

`rewrite` turns a follow-up in a conversation into the standalone question it means
(pipeline/conversations.py); every later stage works on that question. Each stage is a plain
function of the state, testable alone; each is timed. `retrieve` also finds the lesson of a near
question a curator confirmed (writeback.selectors.lessons_near), whose passage `rank` puts first
among its collection's and `verify` makes VERIFIED with its sentence the one to state (`teach`,
`settle`) unless a passage of another collection contradicts it. `rank`
re-orders a pool of top_k * CAIRN_RANK_POOL retrieved chunks by reputation and keeps top_k; `verify`
is the gate (pipeline/gate.py), `correct` asks the external source only when the gate says it should,
`recall` finds critiques of rejected answers to similar questions (the experience store),
`generate` writes from VERIFIED evidence only (or runs the retroactive loop in deep mode), passing
those critiques as warnings, and `record` stores everything the response shows and proposes the
answer as a corpus addition, in one transaction; validation runs after it commits, in a worker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from corpus.consistency import consistency_score
from corpus.embedder import get_embedder
from corpus.selectors import (
    Hit,
    calibrated_relevance_upper,
    chunk_hits,
    chunk_search,
    collections_quoted_by,
    collections_readable_by,
    documents_modified,
    question_terms,
)
from corpus.strips import Strip, strips_of
from judges.verifiers import get_answer_judge, get_entailment_model, get_relevance_model, judges_serving
from pipeline.conversations import Turn, follows_on, standalone, turns_within
from pipeline.gate import Action, Bucket, Candidate, Gate, action_for, answerable_relevances, candidate_from_hit
from pipeline.gate import refine as refine_strips
from pipeline.generators import (
    ANSWERED,
    LLMS,
    Generation,
    GeneratorUnavailable,
    answer_pieces,
    disagreement,
    evidence_texts,
    get_generator,
    get_llm,
    not_found,
)
from pipeline.models import Answer, Conversation, Evidence
from pipeline.output_gate import Withheld, gated
from pipeline.search import SearchError, get_search_provider, keyword_query, trusted_first
from reputation.ranking import hits_rank
from reputation.services import credits_record
from writeback.lessons import lessons_recheck, same_sentence
from writeback.models import Lesson
from writeback.proposals import writeback_propose
from writeback.selectors import LessonMatch, confidence_shifts, critiques_similar, judges_for, lessons_near
from writeback.tasks import writeback_validate_enqueue


@dataclass
class QueryState:
    user: AbstractBaseUser
    question: str
    top_k: int
    mode: str = Answer.Mode.STANDARD
    generator: str = ""  # empty: the mode's default
    collection_ids: list[int] | None = None
    conversation: Conversation | None = None  # None: the record stage starts one
    earlier: list[Turn] = field(default_factory=list)  # the conversation's turns before this one
    asked: str = ""  # the question as typed, when `rewrite` changed it
    carried: set[int] = field(default_factory=set)  # the collections of the earlier turns it carries
    warned: set[int] = field(default_factory=set)  # the collections of the critiques it warns with
    rewritten_by: str = ""
    query_vector: np.ndarray | None = None
    hits: list[Hit] = field(default_factory=list)
    lessons: list[LessonMatch] = field(default_factory=list)  # confirmed answers to a question like this one
    candidates: list[Candidate] = field(default_factory=list)
    gate: Gate | None = None
    action: Action | None = None
    external: dict = field(default_factory=dict)
    generation: Generation | None = None
    iterations: int | None = None
    agreement: float | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # critiques of similar past answers
    timings_ms: dict[str, float] = field(default_factory=dict)
    record: Answer | None = None

    @property
    def verified(self) -> list[Candidate]:
        return [c for c in self.candidates if c.bucket is Bucket.VERIFIED]

    def generator_name(self) -> str:
        if self.mode == Answer.Mode.FAST:
            return "extractive"
        if self.mode == Answer.Mode.DEEP:
            return get_llm().name
        return self.generator or settings.CAIRN_GENERATOR


def rewrite(state: QueryState) -> None:
    """A follow-up becomes the standalone question it means, from the turns before it: by the LLM
    when the answer is an LLM's, else by rules (pipeline/conversations.py). Only what was asked
    before, and the gist of what was answered, go into it; no earlier answer becomes evidence. Only
    turns whose answers drew on the collections this one is asked within (named, or all the asker
    reads now) are carried: the rewritten question is stored where this answer's curators read it."""
    if not state.earlier:
        return
    name = state.generator_name()
    llm = get_generator(name) if name in LLMS else None  # the LLM that writes this answer

    def embed(text: str) -> np.ndarray:  # the typed question's vector serves embed_query if it stands
        state.query_vector = get_embedder().embed([text])[0]
        return state.query_vector

    scope = state.collection_ids
    if scope is None:
        scope = collections_readable_by(user=state.user).values_list("id", flat=True)
    earlier = turns_within(state.earlier, set(scope))
    result = standalone(state.question, earlier, embed=embed, llm=llm)
    if result.by:
        state.query_vector = None
        state.asked, state.question, state.rewritten_by = state.question, result.question, result.by
        state.carried = result.collections
        state.notes.append(f"a follow-up, answered as: {result.question}")
    elif not earlier and follows_on(state.question, state.earlier[-1], embed):
        state.notes.append("a follow-up of a question asked in other collections: answered as it stands")


def embed_query(state: QueryState) -> None:
    if state.query_vector is None:  # `rewrite` may have embedded the question already
        state.query_vector = get_embedder().embed([state.question])[0]


def retrieve(state: QueryState) -> None:
    state.hits = chunk_search(
        user=state.user,
        query_vector=state.query_vector,
        text=state.question,
        limit=state.top_k * settings.CAIRN_RANK_POOL,
        collection_ids=state.collection_ids,
    )
    state.lessons = lessons_reaching(state)
    found = {h.chunk_id for h in state.hits}
    if missing := [m.chunk_id for m in state.lessons if m.chunk_id not in found]:
        state.hits += chunk_hits(
            user=state.user, chunk_ids=missing, query_vector=state.query_vector, collection_ids=state.collection_ids
        )


def lessons_reaching(state: QueryState) -> list[LessonMatch]:
    """The lesson of the nearest question a curator confirmed an answer for, if it is near enough
    and its passage readable by the asker (writeback.selectors.lessons_near). One whose passage a
    re-ingest replaced is re-checked first: kept if the document still holds its sentence."""
    found = lessons_near(user=state.user, query_vector=state.query_vector, collection_ids=state.collection_ids)
    if stale := [m.lesson_id for m in found if m.chunk_id is None]:
        lessons_recheck(Lesson.objects.filter(id__in=stale))
        found = lessons_near(user=state.user, query_vector=state.query_vector, collection_ids=state.collection_ids)
    return [m for m in found if m.chunk_id is not None]


def rank(state: QueryState) -> None:
    """Reputation re-orders the pool (reputation/ranking.py); the best top_k become the candidates,
    a lesson's passage first among its own collection's (lesson_placed)."""
    explore = settings.CAIRN_RANK_EXPLORE_FAST if state.mode == Answer.Mode.FAST else settings.CAIRN_RANK_EXPLORE
    ranked = hits_rank(state.hits, explore=explore, question_vector=state.query_vector)
    ranked = lesson_placed(ranked, {m.chunk_id for m in state.lessons}, state.top_k)
    state.hits = [r.hit for r in ranked]
    state.candidates = [
        candidate_from_hit(
            n, r.hit, rank_score=r.score, reputation=round(r.standing.short_mean, 4),
            reputation_weight=round(r.weight, 4),
        )
        for n, r in enumerate(ranked, start=1)
    ]  # fmt: skip


def lesson_placed(ranked: list, taught: set[int], top_k: int) -> list:
    """The best `top_k` of `ranked`, the lesson's passage (chunk ids `taught`) first among its own
    collection's. A lesson is a curator's word inside their collection: it orders that collection's
    passages and takes the place of its best one, while every other collection's passage keeps the
    place the ranking gave it. When no passage of its collection made the top_k, it joins them last,
    one passage more, rather than take another collection's place."""
    lead = next((r for r in ranked if r.hit.chunk_id in taught), None)
    top = ranked[:top_k]
    if lead is None:
        return top
    slots = [i for i, r in enumerate(top) if r.hit.collection_id == lead.hit.collection_id]
    if not slots:
        return [*top, lead]
    # zip stops at the slots: a lead from outside the top_k pushes its collection's last one out.
    for i, r in zip(slots, [lead, *(top[i] for i in slots if top[i] is not lead)]):
        top[i] = r
    return top


def verify(state: QueryState) -> None:
    terms = question_terms(user=state.user, question=state.question, collection_ids=state.collection_ids)
    upper = calibrated_relevance_upper(user=state.user, collection_ids=state.collection_ids)
    state.gate = Gate(
        state.question, get_relevance_model(), get_entailment_model(), get_answer_judge(),
        query_vector=state.query_vector, terms=terms, upper=upper,
    )  # fmt: skip
    state.gate.score_coverage(state.candidates)
    state.gate.score_relevance(state.candidates)
    lead = teach(state)
    state.gate.verify(state.candidates)  # relevance is cached: agreement compares the lesson's sentence
    settle(state, lead)
    shifts = confidence_shifts({c.hit.collection_id for c in state.candidates if c.hit})
    for candidate in state.candidates:
        candidate.confidence_shift = shifts.get(candidate.hit.collection_id, 0.0) if candidate.hit else 0.0
    state.action = action_for(answerable_relevances(state.candidates), state.gate.upper)


def teach(state: QueryState) -> Candidate | None:
    """The passage of the lesson that reaches this question, its sentence made the passage's best
    strip and the passage as relevant as the upper threshold, before the gate compares passages:
    a curator confirmed that it answers a question this near (a reader's unconfirmed mark never
    gets here), so agreement weighs the sentence the lesson would state. None when no lesson does."""
    for lesson in state.lessons:
        candidate = next((c for c in state.candidates if c.hit and c.hit.chunk_id == lesson.chunk_id), None)
        if candidate is None:
            continue
        position = next((i for i, s in enumerate(candidate.strips) if same_sentence(s.text, lesson.sentence)), None)
        if position is None:
            continue
        candidate.strips[position].relevance = max(candidate.strips[position].relevance, 1.0)
        candidate.relevance = max(candidate.relevance or 0.0, state.gate.upper)
        candidate.taught = position
        candidate.notes.append(
            f"a curator confirmed this passage answers a question like this one ({lesson.similarity:.2f})"
        )
        return candidate  # one lesson states the answer
    return None


def settle(state: QueryState, lead: Candidate | None) -> None:
    """The lesson's passage `lead` is VERIFIED and its sentence the one to state, unless a passage of
    another collection contradicts that sentence (the gate's agreement check). A lesson is its
    curators' word within their collection: it settles what that collection's passages say, and
    never overrides evidence elsewhere; contradicted from outside it is judged as any passage, and
    the reader is told the sources disagree (dispute). The passage keeps its own scores otherwise,
    so the reader sees how the models alone judged it."""
    if lead is None:
        return
    by_n = {c.n: c for c in state.candidates}
    outside = [
        n for n in lead.contradicted_by if by_n[n].hit is None or by_n[n].hit.collection_id != lead.hit.collection_id
    ]
    if outside:
        lead.taught = None
        lead.notes.append(f"a passage of another collection disagrees ({', '.join(f'[{n}]' for n in outside)}): "
                          "weighed as any passage")  # fmt: skip
        return
    lead.trust = max(lead.trust, settings.CAIRN_VERIFIED_THRESHOLD)
    lead.bucket, lead.settled = Bucket.VERIFIED, True


def correct(state: QueryState) -> None:
    """External knowledge, only when the retrieval needs it: the action is AMBIGUOUS or INCORRECT,
    or nothing is VERIFIED while something is UNCERTAIN (it needs confirmation to be usable). A
    CORRECT retrieval with verified evidence does not search: its UNCERTAIN leftovers would cost a
    call per question for little. Results are verified like chunks; they confirm or refute the
    UNCERTAIN ones and, when VERIFIED themselves, may be cited (labelled external)."""
    uncertain = [c for c in state.candidates if c.bucket is Bucket.UNCERTAIN]
    if state.action is Action.CORRECT and (state.verified or not uncertain):
        return
    provider = get_search_provider()
    if provider.name == "none":
        return
    query = _search_query(state)
    state.external = {"provider": provider.name, "query": query, "results": 0}
    try:
        results = provider.search(query, limit=settings.CAIRN_SEARCH_MAX_RESULTS)
    except SearchError as exc:
        state.external["error"] = str(exc)
        state.notes.append(f"external search failed; answered from the corpus alone ({exc})")
        return
    results = trusted_first(results, settings.CAIRN_SEARCH_TRUSTED_DOMAINS)[: settings.CAIRN_SEARCH_MAX_RESULTS]
    state.external["results"] = len(results)
    first = len(state.candidates) + 1
    external = [
        Candidate(
            n=n, text=r.text, title=r.title, source=r.url, consistency=consistency_score(r.text), origin="external",
            strips=[Strip(s) for s in strips_of(r.text)],
        )
        for n, r in enumerate(results, start=first)
    ]  # fmt: skip
    state.candidates += external
    state.gate.verify(state.candidates)  # cached: only the new candidates and pairs cost model calls
    state.gate.confirm(uncertain, external)


def _search_query(state: QueryState) -> str:
    """Keywords for the external source: the LLM rewrites when the answer uses one, else a
    deterministic extractor does."""
    if state.generator_name() in LLMS:
        try:
            rewritten = get_llm().complete(
                "Rewrite this question as a short web search query of keywords only. Reply with the query alone.\n"
                f"Question: {state.question}"
            )
            if rewritten:
                return rewritten.splitlines()[0].strip().strip('"')[:200]
        except GeneratorUnavailable:
            pass  # the generate stage reports the LLM's absence; keywords still work
    return keyword_query(state.question)


def refine(state: QueryState) -> None:
    refine_strips(state.candidates)


def recall(state: QueryState) -> None:
    """The experience store: critiques of rejected answers to similar questions, readable by the asker
    within the collections asked."""
    critiques = critiques_similar(user=state.user, query_vector=state.query_vector, collection_ids=state.collection_ids)
    state.warnings = [c.text for c in critiques]
    # A warning quotes its critique's evidence: whoever reads this answer must curate where that was.
    state.warned = {collection.id for critique in critiques for collection in critique.collections.all()}


def generate(state: QueryState) -> None:
    for _ in generating(state):
        pass


RESTART = None  # generating() yields it when a generator failed part-way: what was streamed is void


def generating(state: QueryState) -> Iterator[str | None]:
    """The generate stage, yielding the answer as it is written: an LLM's sentences as each passes
    the output gate, the extractive answer sentence by sentence (the deep loop's when it is done,
    gated the same way). A generator that fails, or an answer the gate withholds, gives way to the
    extractive answer, with RESTART first where text had gone out."""
    name = state.generator_name()
    if (sides := dispute(state)) is not None:
        state.generation = disagreement(
            [(c.n, c.best_strip.shown) for c in sides], preferred=PREFERRED.get(settings.CAIRN_DISPUTE_PREFER, "")
        )
        yield from answer_pieces(state.generation.text)
        state.notes += state.generation.notes
        return
    if not state.verified:
        state.generation = not_found("none")  # no generator runs without verified evidence
        yield state.generation.text
        return
    streamed = False
    try:
        if state.mode == Answer.Mode.DEEP:
            from pipeline.retro import retroactive_loop

            stream = _replayed(retroactive_loop(state, get_llm()))
        else:
            stream = get_generator(name).stream(state.question, evidence_texts(state.verified), warnings=state.warnings)
        if name in LLMS:  # a model's own words: checked before anyone reads them
            stream = gated(state.question, evidence_texts(state.verified), stream)
        while True:
            try:
                piece = next(stream)
            except StopIteration as done:
                state.generation = done.value
                break
            streamed = True
            yield piece
    except (GeneratorUnavailable, Withheld) as exc:
        if isinstance(exc, Withheld):
            state.notes.append(f"the {name} answer was withheld, answered extractively instead: {exc.reason}")
        else:
            state.notes.append(f"{name} unavailable, answered extractively instead: {exc}")
        if streamed:
            yield RESTART
        state.generation = get_generator("extractive").generate(state.question, evidence_texts(state.verified))
        state.generation.sentences = getattr(exc, "sentences", [])
        yield from answer_pieces(state.generation.text)
    state.notes += state.generation.notes
    state.timings_ms.update(state.generation.timings_ms)


def _replayed(generation: Generation) -> Iterator[str]:
    """A finished Generation as a stream: its sentences, then itself."""
    yield from answer_pieces(generation.text)
    return generation


PREFERRED = {"newer": "newer source", "reputation": "better-rated source"}


def dispute(state: QueryState) -> list[Candidate] | None:
    """Two passages that contradict each other on the answer (the gate's agreement check compares
    only passages of different documents whose best sentences the answer judge both accepts as
    answers: one that merely restates the question, "Many people wonder about …", mostly is not),
    one of them relevant enough to answer from (the upper threshold), the preferred side first.
    Left to agreement alone, both would lose (or five planted passages outvote the one true one)
    and the reader would get "not found" or the planted answer; shown both, the reader decides."""
    if any(c.taught is not None for c in state.candidates):
        return None  # a curator settled what answers it
    by_n = {c.n: c for c in state.candidates}
    relevance = lambda c: c.relevance or 0.0  # noqa: E731
    upper = state.gate.upper if state.gate is not None else settings.CAIRN_RELEVANCE_UPPER
    # The passage the most others contradict goes first (a true one set upon by planted ones), then
    # the most relevant of those that contradict it.
    for first in sorted((c for c in state.candidates if c.contradicted_by),
                        key=lambda c: (-len(c.contradicted_by), -relevance(c))):  # fmt: skip
        second = max((by_n[n] for n in first.contradicted_by), key=relevance)
        if max(relevance(first), relevance(second)) >= upper:
            return _preferred_first([first, second])
    return None


def _preferred_first(sides: list[Candidate]) -> list[Candidate]:
    """CAIRN_DISPUTE_PREFER: "newer" (the document changed last), "reputation" (the better feedback
    record), or "" (as found: the passage the most others contradict)."""
    prefer = settings.CAIRN_DISPUTE_PREFER
    if prefer == "newer":
        ids = [c.hit.document_id for c in sides if c.hit]
        changed = documents_modified(ids)
        return sorted(sides, key=lambda c: -(changed[c.hit.document_id].timestamp() if c.hit else 0.0))
    if prefer == "reputation":
        return sorted(sides, key=lambda c: -(c.reputation if c.reputation is not None else 0.5))
    return sides


def record(state: QueryState) -> None:
    generation = state.generation
    cited = set(generation.cited)
    by_n = {c.n: c for c in state.candidates}
    with transaction.atomic():
        if state.conversation is None and state.user is not None and state.user.is_authenticated:
            state.conversation = Conversation.objects.create(
                user=state.user, title=(state.asked or state.question)[:200]
            )
        elif state.conversation is not None:
            state.conversation.save(update_fields=["updated_at"])
        state.record = Answer.objects.create(
            user=state.user,
            question=state.question,
            conversation=state.conversation,
            asked=state.asked,
            rewritten_by=state.rewritten_by,
            text=generation.text,
            found=generation.found,
            outcome=generation.outcome,
            confidence=generation.confidence,
            claim=generation.claim,
            mode=state.mode,
            action=state.action or "",
            generator=generation.generator,
            citations=[
                {
                    "n": n,
                    "chunk_id": by_n[n].hit.chunk_id if by_n[n].hit else None,
                    "origin": by_n[n].origin,
                    "strips": [s.text for s in by_n[n].strips if s.kept],
                }
                for n in generation.cited
            ],  # fmt: skip
            external=state.external,
            iterations=state.iterations,
            agreement=state.agreement,
            notes=state.notes,
            sentences=generation.sentences,
            warnings=state.warnings,
            timings_ms=dict(state.timings_ms),
            embedding=None if state.query_vector is None else list(map(float, state.query_vector)),
        )
        Evidence.objects.bulk_create(
            Evidence(
                answer=state.record,
                n=c.n,
                origin=c.origin,
                chunk_id=c.hit.chunk_id if c.hit else None,
                title=c.title[:500],
                source=c.source[:2000],
                text=c.text,
                vector_distance=c.hit.vector_distance if c.hit else None,
                text_rank=c.hit.text_rank if c.hit else None,
                fused_score=c.hit.score if c.hit else None,
                rank_score=c.rank_score,
                reputation=c.reputation,
                reputation_weight=c.reputation_weight,
                relevance=c.relevance,
                consistency=c.consistency,
                agreement=c.agreement,
                trust=c.trust,
                bucket=c.bucket,
                strips=[{"text": s.text, "relevance": s.relevance, "kept": s.kept} for s in c.strips],
                notes=c.notes + [f"disagrees with [{other}]" for other in c.contradicted_by],
                cited=c.n in cited,
            )
            for c in state.candidates
        )
        # A carried question is its turn's: whoever reads this answer must curate where it was asked.
        quoted = collections_quoted_by({c.hit.document_id for c in state.candidates if c.hit})
        state.record.collections.set(quoted | state.carried | state.warned)
        credits_record(
            response_id=state.record.response_id, user=state.user, credited=credited(state),
            question_vector=state.query_vector,
        )  # fmt: skip
        if settings.CAIRN_WRITEBACK and (proposed := propose(state)) is not None:
            writeback, new = proposed
            if new:  # a merged repeat was validated (or is queued) already
                transaction.on_commit(lambda: writeback_validate_enqueue(writeback.id))


def credited(state: QueryState) -> list[tuple[int, float]]:
    """(chunk id, similarity) of the chunks feedback on this answer will credit: the corpus
    evidence the generator was given. A not-found answer credits nothing: its chunks were
    rejected by the gate already, rightly or not, and feedback says nothing about them."""
    if not state.generation.found:
        return []
    return [(c.hit.chunk_id, c.hit.similarity or 0.0) for c in state.verified if c.origin == "corpus" and c.hit]


def propose(state: QueryState):
    """Propose an answered answer as a corpus addition (PENDING_VALIDATION), or count it on the
    candidate of the same question with the same answer ((write-back, new?) either way), with a
    snapshot of the verified corpus evidence it was written from. Only an answered outcome is
    proposed: "where to look" and a dispute quote passages without claiming an answer, and not found
    states nothing. An answer that cites external or inferred evidence is not proposed either:
    external passages never enter the corpus by this path, and inferred evidence is the model's own.
    Nor is a follow-up whose question carries an earlier turn's of a collection its evidence is not
    from. It goes to the collection of its most trusted cited evidence."""
    generation = state.generation
    by_n = {c.n: c for c in state.candidates}
    cited = [by_n[n] for n in generation.cited if n in by_n]
    if generation.outcome != ANSWERED or not cited or any(c.origin != "corpus" or c.hit is None for c in cited):
        return None
    best = max(cited, key=lambda c: c.trust)
    shown_to = {best.hit.collection_id} | collections_quoted_by({c.hit.document_id for c in state.verified if c.hit})
    if not state.carried <= shown_to:
        return None  # its question carries an earlier turn's from a collection its reviewers may not curate
    evidence = [
        {"n": c.n, "chunk_id": c.hit.chunk_id, "document_id": c.hit.document_id, "title": c.title, "text": c.text}
        for c in state.verified
        if c.origin == "corpus" and c.hit is not None
    ]
    # What the output gate scored, so that validation does not score the same claims again.
    shown = [s for s in state.record.sentences or [] if s.get("verdict") == "shown"]
    return writeback_propose(
        response_id=state.record.response_id, asked_by=state.user, question=state.question, answer=generation.text,
        evidence=evidence, collection_id=best.hit.collection_id, question_embedding=state.query_vector,
        gate_claims={s["claim"]: s.get("scores", {}) for s in shown},
    )  # fmt: skip


Stage = Callable[[QueryState], None]
STAGES: tuple[Stage, ...] = (rewrite, embed_query, retrieve, rank, verify, correct, refine, recall, generate, record)


def pipeline_run(state: QueryState, stages: Sequence[Stage] = STAGES) -> QueryState:
    """Run `stages` in order, timing each. The stored timings stop before `record` itself."""
    for _ in pipeline_events(state, stages):
        pass
    return state


@dataclass(frozen=True)
class Progress:
    """What a streamed answer tells its reader while it works: a finished stage, or answer text."""

    kind: str  # "stage" or "text"
    data: dict


def pipeline_events(state: QueryState, stages: Sequence[Stage] = STAGES) -> Iterator[Progress]:
    """pipeline_run, one Progress at a time: each finished stage with what it found, and the
    answer's text as the generate stage writes it."""
    started_all = time.perf_counter()
    judges = judges_for(user=state.user, collection_ids=state.collection_ids)
    for stage in stages:
        if stage is record:
            state.timings_ms["total"] = round((time.perf_counter() - started_all) * 1000, 2)
        started = time.perf_counter()
        if stage is generate:
            pieces = generating(state)
            while True:  # the collection's judges serve each step, and never the caller between them
                with judges_serving(*judges):
                    piece = next(pieces, None)
                if piece is None:
                    break
                yield Progress("text", {"restart": True} if piece is RESTART else {"text": piece})
        else:
            with judges_serving(*judges):
                stage(state)
        state.timings_ms[stage.__name__] = round((time.perf_counter() - started) * 1000, 2)
        yield Progress(
            "stage", {"stage": stage.__name__, "ms": state.timings_ms[stage.__name__]} | _found(state, stage)
        )


def _found(state: QueryState, stage: Stage) -> dict:
    """The figures a reader watching the progress cares about, per stage."""
    if stage is rewrite:
        return {"question": state.question, "rewritten_by": state.rewritten_by}
    if stage is retrieve:
        return {"passages": len(state.hits)}
    if stage is verify:
        return {"passages": len(state.candidates), "verified": len(state.verified)}
    if stage is correct:
        return {"searched": bool(state.external), "results": state.external.get("results", 0)}
    if stage is generate:
        return {"found": state.generation.found, "outcome": state.generation.outcome}
    return {}


def best_answerable_relevance(question: str, collection, reader: AbstractBaseUser) -> float:
    """The best relevance among the chunks that hold the question's key terms, as the pipeline's
    retrieval, ranking and gate find them (0 when none holds them)."""
    state = QueryState(user=reader, question=question, top_k=8, mode="fast", collection_ids=[collection.id])
    for stage in (embed_query, retrieve, rank):
        stage(state)
    terms = question_terms(user=reader, question=question, collection_ids=[collection.id])
    # Coverage and relevance only: no NLI model or answer judge is read (agreement is not scored).
    gate = Gate(question, get_relevance_model(), None, None, query_vector=state.query_vector, terms=terms)
    gate.score_coverage(state.candidates)
    gate.score_relevance(state.candidates)
    return max(answerable_relevances(state.candidates), default=0.0)
