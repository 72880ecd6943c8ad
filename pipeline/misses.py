"""Reads for the curators' list of misses: the answers that went unanswered (not found, where to
look), got their asker's thumbs-down, were asked again at once, or were marked by their reader,
grouped by meaning per collection. What a curator decides on a group is writeback.lessons'.

A group is shown only once CAIRN_MISS_MIN_ASKERS distinct people asked it: fewer askers could be
told apart by what they asked. Below that, a reader's mark of a sentence (one that is not the
viewing curator's own) shows the answers so marked, and only those: a marking reader asked for a
curator to look at their question, the others in the group did not."""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import (
    CharField,
    DateTimeField,
    Exists,
    ExpressionWrapper,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Cast, JSONArray
from pgvector.django import CosineDistance

from corpus.embedder import get_embedder
from corpus.models import Chunk, Collection
from corpus.selectors import Hit, chunk_search, collections_curated_by
from pipeline.models import Answer
from pipeline.selectors import answers_curated_by
from reputation.models import Feedback
from writeback.lessons import chunk_sentences
from writeback.models import Gap, Lesson, LessonQuestion, Mark

NOT_FOUND, WHERE_TO_LOOK, THUMBS_DOWN, REASKED, MARKED = (
    "not_found",
    "where_to_look",
    "thumbs_down",
    "reasked",
    "marked",
)
REASONS = {
    NOT_FOUND: "not found",
    WHERE_TO_LOOK: "where to look",
    THUMBS_DOWN: "thumbs down",
    REASKED: "re-asked",
    MARKED: "marked",
}
EXAMPLES = 5
# The most recent misses grouped on one page: clustering keeps every pair's distance (this many
# squared, 4 bytes each: 16 MB), and a year of an intranet's misses would hold the page's memory.
MOST_MISSES = 2000


@dataclass(frozen=True)
class MissGroup:
    """Misses of one collection whose questions mean the same. `response_ids` lists the
    representative's first: it names the group (`key`) for as long as it stays in it."""

    collection: Collection
    size: int
    askers: int
    first_asked: datetime.datetime
    last_asked: datetime.datetime
    examples: list[str]
    reasons: dict[str, int]
    marks: list[Mark]  # the readers' marks that name a sentence
    question: str  # the representative question: the group's medoid
    response_ids: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.response_ids[0]

    @property
    def reasons_shown(self) -> list[tuple[str, int]]:
        return [(label, self.reasons[reason]) for reason, label in REASONS.items() if self.reasons[reason]]


def answers_settled() -> Q:
    """Answers a curator's decision settled: named by a lesson or a gap (their response_ids)."""
    named = JSONArray(Cast(OuterRef("response_id"), CharField()))
    return Q(Exists(Lesson.objects.filter(response_ids__contains=named))) | Q(
        Exists(Gap.objects.filter(response_ids__contains=named))
    )


def misses_within(*, user: AbstractBaseUser, collection_ids: Sequence[int]) -> QuerySet[Answer]:
    """The answers `user` curates that drew on `collection_ids` and missed, not yet settled, each
    annotated with why: thumbs_down (its asker's), reasked (the same person asked a question this
    near within CAIRN_MISS_REASKED_MINUTES after it), marked (its reader marked it)."""
    window = datetime.timedelta(minutes=settings.CAIRN_MISS_REASKED_MINUTES)
    asked_again = (
        Answer.objects.filter(
            user_id=OuterRef("user_id"),
            created_at__gt=OuterRef("created_at"),
            created_at__lte=ExpressionWrapper(OuterRef("created_at") + window, output_field=DateTimeField()),
        )
        .annotate(distance=CosineDistance("embedding", OuterRef("embedding")))
        .filter(distance__lte=settings.CAIRN_MISS_GROUP_DISTANCE)
    )
    drew_on = Answer.collections.through.objects.filter(collection_id__in=list(collection_ids))
    return (
        Answer.objects.filter(pk__in=answers_curated_by(user=user).values("pk"))
        .filter(pk__in=drew_on.values("answer_id"))
        .annotate(
            thumbs_down=Exists(
                Feedback.objects.filter(response_id=OuterRef("response_id"), user_id=OuterRef("user_id"), thumbs=0)
            ),
            reasked=Exists(asked_again),
            marked=Exists(Mark.objects.filter(response_id=OuterRef("response_id"))),
        )
        .filter(
            Q(outcome__in=[Answer.Outcome.NOT_FOUND, Answer.Outcome.WHERE_TO_LOOK])
            | Q(thumbs_down=True)
            | Q(reasked=True)
            | Q(marked=True)
        )
        .exclude(answers_settled())
    )


def groups_of(vectors: np.ndarray, *, distance: float) -> list[list[int]]:
    """Indices of `vectors` grouped by meaning: average-linkage clusters no wider than `distance`
    (cosine), the largest first."""
    if len(vectors) == 0:
        return []
    if len(vectors) == 1:
        return [[0]]
    from sklearn.cluster import AgglomerativeClustering  # heavy: only the list of misses needs it

    labels = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=distance
    ).fit_predict(vectors)
    groups: dict[int, list[int]] = defaultdict(list)
    for i, label in enumerate(labels):
        groups[int(label)].append(i)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def medoid(vectors: np.ndarray) -> int:
    """The index of the vector nearest, in total cosine distance, to all the others."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return int(np.argmin((1.0 - unit @ unit.T).sum(axis=1)))


def misses_for(*, user: AbstractBaseUser, collection: Collection | None = None) -> list[MissGroup]:
    """The groups of misses `user` may see in the collections they curate (or in `collection`, if
    they curate it), the largest first. A group is shown once CAIRN_MISS_MIN_ASKERS distinct people
    asked it; below that, as its answers that a reader other than `user` marked a sentence in (what
    those readers asked, never the other members' questions); never otherwise, whoever looks."""
    curated = collections_curated_by(user=user)
    if collection is not None:
        curated = curated.filter(id=collection.id)
    collections = {c.id: c for c in curated}
    if not collections:
        return []
    rows = list(
        misses_within(user=user, collection_ids=list(collections))
        .order_by("-created_at", "-id")[:MOST_MISSES]
        .values(
            "id",
            "response_id",
            "user_id",
            "question",
            "created_at",
            "outcome",
            "embedding",
            "thumbs_down",
            "reasked",
            "marked",
        )  # fmt: skip
    )
    if not rows:
        return []
    vectors = _question_vectors(rows)
    by_id = {row["id"]: i for i, row in enumerate(rows)}
    within: dict[int, list[int]] = defaultdict(list)
    for answer_id, collection_id in (
        Answer.collections.through.objects.filter(answer_id__in=list(by_id), collection_id__in=list(collections))
        .order_by("collection_id", "answer_id")
        .values_list("answer_id", "collection_id")
    ):
        within[collection_id].append(by_id[answer_id])
    marks = defaultdict(list)
    for mark in (
        Mark.objects.filter(response_id__in=[row["response_id"] for row in rows])
        .exclude(sentence="")
        .select_related("chunk__document", "collection")
        .order_by("-updated_at")
    ):
        marks[str(mark.response_id)].append(mark)
    threshold, distance = settings.CAIRN_MISS_MIN_ASKERS, settings.CAIRN_MISS_GROUP_DISTANCE
    shown = []
    for collection_id, members in within.items():
        for group in groups_of(vectors[members], distance=distance):
            indices = [members[i] for i in group]
            if _askers([rows[i] for i in indices]) < threshold:
                # Below k, only answers a reader other than the viewer marked: a curator's own mark on
                # an answer of theirs in the group would otherwise show every member's question.
                indices = [i for i in indices if any(m.user_id != user.pk for m in marks[str(rows[i]["response_id"])])]
            if indices:
                shown.append(_group(collections[collection_id], [rows[i] for i in indices], vectors[indices], marks))
    return sorted(shown, key=lambda g: (-g.size, -g.askers, -g.last_asked.timestamp(), g.collection.slug))


def group_phrasings(group: MissGroup) -> list[tuple[str, list[float]]]:
    """How the group's askers put it: (question, embedding) of each of its answers that has one."""
    answers = Answer.objects.filter(response_id__in=group.response_ids, embedding__isnull=False)
    return [(question, list(map(float, vector))) for question, vector in answers.values_list("question", "embedding")]


def miss_group_get(*, user: AbstractBaseUser, collection: Collection, response_id) -> MissGroup | None:
    """The group shown to `user` in `collection` that holds the answer `response_id`, or None."""
    wanted = str(response_id)
    return next((g for g in misses_for(user=user, collection=collection) if wanted in g.response_ids), None)


@dataclass(frozen=True)
class Passage:
    hit: Hit
    chunk: Chunk
    sentences: list[str]  # as its card lists them: the ones a lesson may name


def passages_for(*, user: AbstractBaseUser, collection: Collection, text: str, limit: int = 5) -> list[Passage]:
    """The passages of `collection` that best match `text` (chunk_search, as `user` reads them),
    each with its sentences: where a curator picks the one that answers."""
    vector = get_embedder().embed([text])[0]
    hits = chunk_search(user=user, query_vector=vector, text=text, limit=limit, collection_ids=[collection.id])
    chunks = Chunk.objects.select_related("document").in_bulk([h.chunk_id for h in hits])
    return [Passage(h, chunks[h.chunk_id], chunk_sentences(chunks[h.chunk_id])) for h in hits if h.chunk_id in chunks]


def _question_vectors(rows: list[dict]) -> np.ndarray:
    """The questions' embeddings: as recorded, or (answers from before they were) embedded now, in
    one batch."""
    missing = [i for i, row in enumerate(rows) if row["embedding"] is None]
    fresh = get_embedder().embed([rows[i]["question"] for i in missing]) if missing else []
    vectors = [None if row["embedding"] is None else np.asarray(row["embedding"], dtype=np.float32) for row in rows]
    for i, vector in zip(missing, fresh, strict=True):
        vectors[i] = np.asarray(vector, dtype=np.float32)
    return np.vstack(vectors)


def _askers(rows: list[dict]) -> int:
    return len({r["user_id"] for r in rows if r["user_id"] is not None})


def _group(collection: Collection, rows: list[dict], vectors: np.ndarray, marks: dict[str, list[Mark]]) -> MissGroup:
    centre = medoid(vectors)
    newest_first = sorted(rows, key=lambda r: r["created_at"], reverse=True)
    response_ids = [str(rows[centre]["response_id"])]
    response_ids += [str(r["response_id"]) for r in newest_first if str(r["response_id"]) != response_ids[0]]
    reasons = {
        NOT_FOUND: sum(r["outcome"] == Answer.Outcome.NOT_FOUND for r in rows),
        WHERE_TO_LOOK: sum(r["outcome"] == Answer.Outcome.WHERE_TO_LOOK for r in rows),
        THUMBS_DOWN: sum(r["thumbs_down"] for r in rows),
        REASKED: sum(r["reasked"] for r in rows),
        MARKED: sum(r["marked"] for r in rows),
    }
    asked = [r["created_at"] for r in rows]
    return MissGroup(
        collection=collection,
        size=len(rows),
        askers=_askers(rows),
        first_asked=min(asked),
        last_asked=max(asked),
        examples=list(dict.fromkeys(r["question"] for r in newest_first))[:EXAMPLES],
        reasons=reasons,
        marks=[mark for response_id in response_ids for mark in marks.get(response_id, [])],
        question=rows[centre]["question"],
        response_ids=response_ids,
    )


class _Count(Subquery):
    template = "(SELECT count(*) FROM (%(subquery)s) _counted)"
    output_field = IntegerField()


def lessons_with_later_askers(lessons: QuerySet[Lesson]) -> QuerySet[Lesson]:
    """`lessons` with `later_askers`: the answers made after each lesson to a question within
    CAIRN_LESSON_SIMILARITY of any of its wordings (as writeback.selectors.lessons_near reaches it),
    drawn on its collection (the questions it should now answer), and `later_answered`: how many of
    those were answered."""
    near_a_wording = (
        LessonQuestion.objects.filter(lesson_id=OuterRef(OuterRef("pk")))
        .annotate(distance=CosineDistance("embedding", OuterRef("embedding")))
        .filter(distance__lte=1.0 - settings.CAIRN_LESSON_SIMILARITY)
    )
    later = Answer.objects.filter(
        Exists(near_a_wording), created_at__gt=OuterRef("created_at"), collections=OuterRef("collection_id")
    ).order_by()
    return lessons.annotate(
        later_askers=_Count(later.values("id")),
        later_answered=_Count(later.filter(outcome=Answer.Outcome.ANSWERED).values("id")),
    )
