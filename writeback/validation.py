"""The acceptance layer (Bidirectional RAG): may this answer become a corpus addition?

Runs in the background (writeback/tasks.py) on the write-back the answer proposed, and again,
synchronously, when a curator edits one. Three checks, thresholds in settings:

- grounding (Eq. 8): the mean over answer sentences of the best NLI entailment against the
  answer's corpus evidence. A sentence copied from its evidence is grounded by construction when
  judged as it stands, or, alone, when the answer judge accepts it as stating the answer. A sentence is judged as the claim it makes about its question: "Delhi."
  alone is entailed by nothing, "Delhi is the capital of India." can be (nli_data.claim_from, the
  same form the NLI model was trained and calibrated on). CAIRN_GROUNDING_THRESHOLD.
- attribution (Eq. 9): valid citations / (citations + uncited sentences): a citation is valid when
  it names evidence the generator was given; an uncited sentence counts against. CAIRN_ATTRIBUTION_THRESHOLD.
- novelty (Eq. 10): 1 - the highest cosine similarity between what would be published and any
  active chunk, readable by the asker or not, or any write-back awaiting review. CAIRN_NOVELTY_THRESHOLD;
  or else closer to its question than any of those (question_gain, CAIRN_NOVELTY_QUESTION_GAIN).

- relevance: does the answer state an answer to its question? The answer judge's best score over
  the answer's sentences (and, for an answer drawn from several sources, over it whole;
  CAIRN_ANSWER_THRESHOLD): a grounded answer to another question (an extractive answer that
  quotes the wrong sentence) must not be written back as this one's. The relevance evaluator on the
  whole answer, which it replaced, rejected right answers padded with context and let more wrong
  ones through (benchmarks/HISTORY.md). Not judged for an answer made only of fragments (see
  answer_relevance).

And the loop guard: some sentence must be entailed (at the grounding threshold) by a SOURCE
document; an answer that rests only on earlier write-backs is refused. The cap on generated
content (CAIRN_WRITEBACK_ALPHA_MAX) holds a candidate that passes: it waits in review.

Verdicts: REJECTED with a machine-readable critique (and a Critique the generator will see as a
warning on similar questions), or PENDING_REVIEW; CAIRN_AUTO_PUBLISH publishes candidates that clear
the stricter CAIRN_AUTO_PUBLISH_* bars. Every verdict leaves an audit row and an ExperienceLog.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from pgvector.django import CosineDistance

from common.exceptions import CairnError
from corpus.audit import audit
from corpus.embedder import get_embedder
from corpus.models import Chunk, Document
from corpus.selectors import documents_within
from corpus.services import embedding_input
from judges.grounding import SentenceCheck, answer_relevance, answer_sentences, check_grounding, claim_for
from writeback.models import Critique, ExperienceLog, WriteBack
from writeback.proposals import cap_reason, writeback_publish, writeback_title
from writeback.selectors import writeback_collection_ids, writebacks_within


@dataclass
class Validation:
    grounding: float
    attribution: float
    novelty: float
    relevance: float | None  # does the answer address its question? None: fragments only, not judged
    sentences: list[SentenceCheck]
    nearest: dict
    text: str  # what would be published
    embedding: list[float]  # of what would be published: novelty, and later candidates' novelty
    question_embedding: list[float]  # finds this experience for similar questions
    critique: list[dict] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.critique


def proposed_text(question: str, sentences: list[tuple[str, list[int]]], evidence: list[dict]) -> str:
    """The document a write-back would publish: each sentence as it stands, a fragment as the claim
    it makes ("Delhi." becomes a statement that stands alone), citations resolved to the titles
    of their sources."""
    titles = {e["n"]: e.get("title") or "untitled" for e in evidence}
    parts = []
    for sentence, cited in sentences:
        claim = claim_for(question, sentence, alone=False).rstrip(".!?")  # fragments become statements
        sources = "; ".join(dict.fromkeys(titles.get(n, f"unknown source {n}") for n in cited))
        parts.append(f"{claim} ({sources})." if sources else f"{claim}.")
    return " ".join(parts)


def gate_scores(writeback: WriteBack, sentences: list[tuple[str, list[int]]]) -> list[dict[int, float]]:
    """The entailment the output gate scored for each of these sentences, by evidence number, where it
    judged the same claim (an LLM's answer, unedited): validation does not score it again. The gate
    scored against the passages as the model saw them (their kept strips), which can only hold less
    than the whole chunk the snapshot keeps: a reused score errs towards rejection."""
    claims = writeback.gate_claims or {}  # handed over by the record stage (pipeline.stages.propose)
    alone = len(sentences) == 1
    return [
        {int(n): p for n, p in claims.get(claim_for(writeback.question, s, alone=alone), {}).items()}
        for s, _ in sentences
    ]


def attribution_score(sentences: list[tuple[str, list[int]]], used: set[int]) -> tuple[float, list[int], list[str]]:
    """(score, citations naming unused evidence, uncited sentences)."""
    citations = [n for _, cited in sentences for n in cited]
    bad = [n for n in citations if n not in used]
    uncited = [s for s, cited in sentences if not cited]
    total = len(citations) + len(uncited)
    return ((len(citations) - len(bad)) / total if total else 0.0), bad, uncited


def nearest_existing(vector, *, exclude: WriteBack) -> dict:
    """The most similar active chunk or write-back awaiting review, with its id, similarity and
    first 500 characters, among the collections the write-back already shows
    (writeback_collection_ids): its curators see this text, and may curate no other collection.
    A duplicate elsewhere is no duplicate for the readers this one is published to."""
    within = writeback_collection_ids(exclude)
    chunks = Chunk.objects.filter(document__in=documents_within(within).values("id"))
    if exclude.document_id:
        chunks = chunks.exclude(document_id=exclude.document_id)
    chunk = chunks.annotate(distance=CosineDistance("embedding", vector)).order_by("distance").values(
        "id", "document_id", "text", "distance"
    ).first()  # fmt: skip
    pending = (
        writebacks_within(within)
        .filter(status=WriteBack.Status.PENDING_REVIEW, embedding__isnull=False)
        .exclude(id=exclude.id)
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")
        .values("id", "answer", "distance")
        .first()
    )
    found = []
    if chunk:
        found.append({"kind": "chunk", "id": chunk["id"], "document_id": chunk["document_id"],
                      "text": chunk["text"][:500], "similarity": round(1 - chunk["distance"], 4)})  # fmt: skip
    if pending:
        found.append({"kind": "writeback", "id": pending["id"], "text": pending["answer"][:500],
                      "similarity": round(1 - pending["distance"], 4)})  # fmt: skip
    return max(found, key=lambda f: f["similarity"], default={})


def validate(writeback: WriteBack, *, answer: str | None = None) -> Validation:
    """Score `answer` (default: the write-back's own) against the write-back's evidence snapshot."""
    answer = writeback.answer if answer is None else answer
    rows = list(
        Document.objects.filter(
            id__in=[e["document_id"] for e in writeback.evidence if e.get("document_id")]
        ).values_list("id", "status", "origin")
    )
    documents = {id_: status for id_, status, _ in rows}
    origins = {id_: origin for id_, _, origin in rows}
    evidence = [{**e, "origin": origins.get(e.get("document_id"))} for e in writeback.evidence]
    sentences = answer_sentences(answer)
    checks = check_grounding(writeback.question, sentences, evidence, known=gate_scores(writeback, sentences))
    grounding = round(sum(c.entailment for c in checks) / len(checks), 4) if checks else 0.0
    attribution, bad, uncited = attribution_score(sentences, {e["n"] for e in evidence})
    relevance = answer_relevance(writeback.question, sentences)
    text = proposed_text(writeback.question, sentences, writeback.evidence)
    vector, question_vector = (
        v.tolist()
        for v in get_embedder().embed([embedding_input(writeback_title(writeback), text), writeback.question])
    )
    nearest = nearest_existing(vector, exclude=writeback)
    novelty = round(1 - nearest.get("similarity", 0.0), 4)
    if nearest:
        nearest["question"] = question_gain(question_vector, vector, exclude=writeback)

    critique = []
    threshold = settings.CAIRN_GROUNDING_THRESHOLD
    retracted = sorted(d for d, status in documents.items() if status != Document.Status.ACTIVE)
    if retracted or len(documents) < len({e["document_id"] for e in writeback.evidence if e.get("document_id")}):
        critique.append({"check": "evidence", "reason": "evidence documents were retracted or removed",
                         "documents": retracted})  # fmt: skip
    if grounding < threshold:
        weakest = min(checks, key=lambda c: c.entailment, default=None)
        critique.append({
            "check": "grounding", "score": grounding, "threshold": threshold,
            "sentence": weakest.sentence if weakest else "", "claim": weakest.claim if weakest else "",
            "entailment": weakest.entailment if weakest else 0.0, "verbatim": bool(weakest and weakest.verbatim),
        })  # fmt: skip
    elif not any(c.source_entailment >= threshold for c in checks):
        critique.append({"check": "loop_guard", "reason": "no sentence is entailed by a source document",
                         "threshold": threshold})  # fmt: skip
    if attribution < settings.CAIRN_ATTRIBUTION_THRESHOLD:
        critique.append({"check": "attribution", "score": round(attribution, 4),
                         "threshold": settings.CAIRN_ATTRIBUTION_THRESHOLD, "bad_citations": bad,
                         "uncited": uncited})  # fmt: skip
    if relevance is not None and relevance < settings.CAIRN_ANSWER_THRESHOLD:
        critique.append({"check": "relevance", "score": relevance,
                         "threshold": settings.CAIRN_ANSWER_THRESHOLD})  # fmt: skip
    if novelty < settings.CAIRN_NOVELTY_THRESHOLD and _gain(nearest) < settings.CAIRN_NOVELTY_QUESTION_GAIN:
        critique.append({"check": "novelty", "score": novelty, "threshold": settings.CAIRN_NOVELTY_THRESHOLD,
                         "question_gain": _gain(nearest), "nearest": nearest})  # fmt: skip
    return Validation(
        grounding, round(attribution, 4), novelty, relevance, checks, nearest, text, vector, question_vector, critique
    )


def question_gain(question_vector, vector, *, exclude: WriteBack) -> dict:
    """How much closer to its question the write-back is than anything the corpus holds: the cosine
    of question and write-back, of question and the nearest existing text, and their difference.
    A quote of its evidence repeats the corpus (Eq. 10's novelty is low) and yet can be what the
    question needed: the sentences that answer it, where the corpus has them inside a longer passage
    that sits farther from the question (NQ, "who is the guy who walked across the twin towers":
    Philippe Petit's opening sentence, 0.088 novel, at cosine 0.640 to the question against its
    passage's 0.563)."""
    import numpy as np

    a, b = np.asarray(question_vector, dtype=np.float32), np.asarray(vector, dtype=np.float32)
    this = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) or 1.0))
    existing = nearest_existing(question_vector, exclude=exclude).get("similarity", 0.0)
    return {"this": round(this, 4), "existing": existing, "gain": round(this - existing, 4)}


def _gain(nearest: dict) -> float:
    return nearest.get("question", {}).get("gain", 1.0) if nearest else 1.0


def critique_text(critique: list[dict]) -> str:
    """The critique in words, as later answers to similar questions are warned with it: what was
    wrong, never the asker's question or the answer's words (another reader's text is data that
    stays with its reader: a question carrying an injection once reached other users' warnings and
    the LLM's prompt this way). A curator's reason is the curator's own words."""
    reasons = []
    for item in critique:
        check = item["check"]
        if check == "grounding" and item.get("verbatim"):  # true of a quote: it is in the evidence
            reasons.append("a quote of its evidence could not be confirmed to answer the question")
        elif check == "grounding":
            reasons.append("a claim it made was not supported by its evidence")
        elif check == "attribution":
            if item["bad_citations"]:
                reasons.append("it cited evidence that was not given")
            if item["uncited"]:
                reasons.append("a sentence cited nothing")
        elif check == "loop_guard":
            reasons.append("it rested only on earlier generated answers, not on source documents")
        elif check == "curator":
            reasons.append(f"a curator said: {item['reason']}")
        elif check == "evidence":
            reasons.append("its evidence was retracted")
        elif check == "relevance":
            reasons.append("it did not answer the question asked")
    # Novelty is not named: repeating the knowledge base is no mistake to warn a later answer about.
    reasons = reasons or ["it repeated what the knowledge base already says"]  # novelty alone: warns no one
    return "An earlier answer to a similar question was rejected: " + "; ".join(reasons) + "."


def critique_record(
    writeback: WriteBack, critique: list[dict], *, source: str, embedding, actor: AbstractBaseUser | None = None
) -> Critique:
    """A Critique readable by readers of all of the write-back's evidence collections. It warns later
    answers only when it names a mistake: not for novelty (a duplicate teaches nothing), nor for a
    quote of the evidence the NLI model could not confirm (the judge's doubt, not the answer's fault)."""
    row = Critique.objects.create(
        writeback=writeback, source=source, question=writeback.question,
        text=critique_text(critique), checks=critique, embedding=embedding, created_by=actor,
        warns=any(_names_a_mistake(item) for item in critique),
    )  # fmt: skip
    row.collections.set(writeback_collection_ids(writeback))
    return row


def _names_a_mistake(item: dict) -> bool:
    return item["check"] != "novelty" and not (item["check"] == "grounding" and item.get("verbatim"))


def _scores(validation: Validation) -> dict:
    return {"grounding": validation.grounding, "attribution": validation.attribution, "novelty": validation.novelty,
            "relevance": validation.relevance}  # fmt: skip


def writeback_validate(writeback_id: int) -> WriteBack | None:
    """The background task: validate a PENDING_VALIDATION write-back and record the verdict.
    Idempotent: a write-back validated already (by another worker, or before a crash) is left
    alone, so a task handed out twice does no harm."""
    writeback = WriteBack.objects.filter(id=writeback_id, status=WriteBack.Status.PENDING_VALIDATION).first()
    if writeback is None:
        return None
    validation = validate(writeback)  # the slow part, outside any lock
    with transaction.atomic():
        writeback = (
            WriteBack.objects.select_for_update(skip_locked=True)
            .filter(id=writeback_id, status=WriteBack.Status.PENDING_VALIDATION)
            .first()
        )
        if writeback is None:
            return None
        verdict_record(writeback, validation, actor=None)
    if writeback.status == WriteBack.Status.PENDING_REVIEW and _auto_publishable(validation):
        with contextlib.suppress(CairnError):  # held by the cap: it waits in review, `held` says why
            writeback_publish(writeback)
        writeback.refresh_from_db()
    return writeback


def verdict_record(writeback: WriteBack, validation: Validation, *, actor: AbstractBaseUser | None) -> None:
    """Store the scores and the verdict, with an ExperienceLog, a Critique when rejected, an audit row."""
    before = writeback.status
    _scores_store(writeback, validation)
    writeback.status = WriteBack.Status.PENDING_REVIEW if validation.passed else WriteBack.Status.REJECTED
    writeback.held = cap_reason(writeback.collection) if validation.passed else ""
    writeback.save()
    _experience_store(writeback, validation, accepted=validation.passed)
    if not validation.passed:
        critique_record(writeback, validation.critique, source=Critique.Source.VALIDATION,
                        embedding=validation.question_embedding, actor=actor)  # fmt: skip
    failed = ", ".join(item["check"] for item in validation.critique)
    audit("writeback.validate", writeback, actor=actor,
          summary=f"rejected: {failed}" if failed else "passed: awaits review",
          before={"status": before}, after={"status": writeback.status, **_scores(validation)})  # fmt: skip


def advice_record(
    writeback: WriteBack, validation: Validation, *, answer: str, actor: AbstractBaseUser, note: str = ""
) -> None:
    """A curator's edited `answer`, validated as advice: it replaces the answer, its scores and what
    would be published are stored, the status is left to the curator's decision, and no critique is
    made. The audit row says which checks the curator overrode."""
    before, writeback.answer = writeback.answer, answer
    _scores_store(writeback, validation)
    writeback.save()
    _experience_store(writeback, validation, accepted=True)  # accepted: by the curator
    failed = ", ".join(item["check"] for item in validation.critique)
    audit("writeback.edit", writeback, actor=actor,
          summary=note or (f"approved over failed checks: {failed}" if failed else "edited; passes validation"),
          before={"answer": before}, after={"answer": writeback.answer, **_scores(validation),
                                            "overridden": [item["check"] for item in validation.critique]})  # fmt: skip


def _scores_store(writeback: WriteBack, validation: Validation) -> None:
    writeback.grounding, writeback.attribution, writeback.novelty, writeback.relevance = (
        validation.grounding, validation.attribution, validation.novelty, validation.relevance,
    )  # fmt: skip
    writeback.sentences = [vars(c) for c in validation.sentences]
    writeback.nearest, writeback.critique, writeback.text = validation.nearest, validation.critique, validation.text
    writeback.embedding, writeback.validated_at = validation.embedding, timezone.now()


def _experience_store(writeback: WriteBack, validation: Validation, *, accepted: bool) -> None:
    ExperienceLog.objects.update_or_create(
        writeback=writeback,
        defaults={"question": writeback.question, "accepted": accepted, "scores": _scores(validation),
                  "embedding": validation.question_embedding},
    )  # fmt: skip


def _auto_publishable(validation: Validation) -> bool:
    return (
        settings.CAIRN_AUTO_PUBLISH
        and validation.passed
        and validation.grounding >= settings.CAIRN_AUTO_PUBLISH_GROUNDING
        and (
            validation.novelty >= settings.CAIRN_AUTO_PUBLISH_NOVELTY
            or _gain(validation.nearest) >= settings.CAIRN_AUTO_PUBLISH_QUESTION_GAIN
        )
    )
