"""Judges adapted to one collection (pipeline/judge_adaptation.py): the teacher asked through a real
llama.cpp server under a JSON schema, its replies cached; the answer judge and relevance evaluator
fine-tuned on what survives the checks; each serving that collection only when it read the held-out
questions better than the shipped one; versioned, audited, and retired back to the shipped judges."""

import json
import shutil

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from corpus.models import AuditEvent
from corpus.services import collection_get_or_create
from judges import verifiers
from judges.teacher_questions import SCHEMA, TeacherCache
from pipeline.generators import GeneratorUnavailable, OpenAIGenerator
from pipeline.judge_adaptation import (
    GIVE_UP_AFTER,
    passages_to_ask,
    teacher_cache,
    teacher_write,
)
from pipeline.services import question_answer
from tests.test_llm import on
from writeback.models import JudgeVersion
from writeback.selectors import judges_for

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def adaptation_dir(tmp_path, settings):
    settings.CAIRN_ADAPTATION_DIR = tmp_path / "adaptation"
    return settings.CAIRN_ADAPTATION_DIR


SETTINGS = [
    ("cache_pages", "page cache", 64, "lumend"),
    ("worker_threads", "request workers", 8, "lumend"),
    ("log_rotation_days", "days of logs", 14, "the log shipper"),
    ("upload_limit_mb", "largest upload", 25, "the gateway"),
    ("session_timeout", "idle session length", 30, "the portal"),
    ("backup_copies", "kept backups", 7, "the backup agent"),
]


def manual(tmp_path, entries: int = 30, *, page: str = "lumen.md", first: int = 0) -> str:
    """A configuration manual's `page` of `entries` settings from the `first`, one section each: what
    it sets, its default, what must restart after a change."""
    lines = ["# Lumen configuration reference", ""]
    for i in range(first, first + entries):
        name, what, default, service = SETTINGS[i % len(SETTINGS)]
        name = f"{name}_{i}"
        lines += [f"## {name}", "",
                  f"The {name} setting controls the {what} of the Lumen server in zone {i}. "
                  f"The default value of {name} is {default * (i + 1)} units. "
                  f"Changing {name} requires a restart of {service} before it takes effect.", ""]  # fmt: skip
    folder = tmp_path / "manual"
    folder.mkdir(exist_ok=True)
    (folder / page).write_text("\n".join(lines))
    return str(folder)


def taught(collection, passages: int) -> int:
    """Cache the replies a good teacher gives (two questions a passage, each with its sentence)."""
    cache = teacher_cache(collection)
    for chunk in passages_to_ask(collection, passages):
        name = chunk.heading.split("›")[-1].strip()
        sentences = chunk.text.replace("\n", " ").split(". ")
        default = next(s for s in sentences if s.startswith("The default")) + "."
        restart = next(s for s in sentences if s.startswith("Changing")).rstrip(".") + "."
        cache.add(chunk, {"questions": [
            {"question": f"What is {name} set to if I leave it alone?", "sentence": default},
            {"question": f"Which service must I restart after editing {name}?", "sentence": restart},
        ]}, model="scripted", seconds=0.0)  # fmt: skip
    return len(cache.replies)


def test_the_teacher_answers_through_llama_cpp_under_the_schema_and_its_replies_are_cached(tmp_path, smollm2):
    with on(smollm2):
        llm = OpenAIGenerator(smollm2.url, smollm2.model, timeout=120, context=2048, max_tokens=256)
        collection, _ = collection_get_or_create(slug="lumen", group_names=["lumen-readers"])
        call_command("ingest", manual(tmp_path, entries=3), collection="lumen", verbosity=0)
        chunks = passages_to_ask(collection, 2)
        cache = TeacherCache(tmp_path / "teacher.jsonl")
        assert teacher_write(chunks, cache, llm, model="smollm2") == {"asked": 2}
    # llama-cpp-python's server refuses OpenAI's "json_schema" form and takes the schema in
    # "json_object"; the client found that and kept it. What came back is held to the schema.
    assert llm.json_form is not None and llm.json_form(SCHEMA)["type"] == "json_object"
    for line in (tmp_path / "teacher.jsonl").read_text().splitlines():
        reply = json.loads(line)["reply"]
        assert isinstance(reply["questions"], list) and 1 <= len(reply["questions"]) <= 3
        assert all(isinstance(q["question"], str) and isinstance(q["sentence"], str) for q in reply["questions"])
    assert teacher_write(chunks, TeacherCache(tmp_path / "teacher.jsonl"), llm, model="smollm2") == {"cached": 2}


def test_a_teacher_that_is_down_is_given_up_after_a_few_passages_and_asked_again_next_time(tmp_path):
    collection, _ = collection_get_or_create(slug="lumen", group_names=["lumen-readers"])
    call_command("ingest", manual(tmp_path, entries=8), collection="lumen", verbosity=0)
    down = OpenAIGenerator("http://127.0.0.1:9", "none", timeout=2, context=2048, max_tokens=64)
    with pytest.raises(GeneratorUnavailable):
        down.complete_json([{"role": "user", "content": "hello"}], SCHEMA)
    cache = TeacherCache(tmp_path / "teacher.jsonl")
    outcomes = teacher_write(passages_to_ask(collection, 8), cache, down, model="none")
    assert outcomes == {"failed": GIVE_UP_AFTER, "not asked": 8 - GIVE_UP_AFTER} and not cache.replies


def test_adapting_trains_both_judges_guards_them_on_held_out_questions_and_records_a_version(tmp_path, alice):
    collection, _ = collection_get_or_create(slug="lumen", group_names=["finance"])
    call_command("ingest", manual(tmp_path, entries=24), collection="lumen", verbosity=0)
    assert taught(collection, 24) == 24
    call_command("adapt", collection="lumen", no_teacher=True, passages=24, verbosity=0)

    row = JudgeVersion.objects.get(collection=collection)
    figures = row.figures
    assert row.version == 1 and figures["teacher"] == "cached replies" and figures["questions"] == 48
    assert figures["held_out_questions"] + figures["training_questions"] == 48 and figures["held_out_questions"] >= 8
    shipped, adapted = figures["held_out_shipped"], figures["held_out_adapted"]
    # An adapted judge is a candidate only where it read the held-out questions better than the
    # shipped one; the candidates serve only when the held-out questions, answered end to end,
    # fare better with them.
    answer_better = adapted["answer_top1"] > shipped["answer_top1"]
    relevance_better = adapted["relevance_mrr"] > shipped["relevance_mrr"]
    answered_better = answer_better or relevance_better
    if answered_better:
        answered_better = (
            adapted["stated"] > shipped["stated"] and adapted["stated_or_pointed"] >= shipped["stated_or_pointed"]
        )
    assert row.status == (JudgeVersion.Status.SERVING if answered_better else JudgeVersion.Status.KEPT_BACK)
    assert bool(row.answer_model) == (answered_better and answer_better)
    assert bool(row.relevance_model) == (answered_better and relevance_better)
    assert answered_better or figures["why"]
    # The models are under the data folder, named by collection and version.
    assert (settings.CAIRN_ADAPTATION_DIR / "lumen" / "v1" / "answer" / "model.safetensors").exists()
    assert (settings.CAIRN_ADAPTATION_DIR / "lumen" / "v1" / "relevance" / "training.json").exists()
    event = AuditEvent.objects.get(action="collection.adapt_judges", object_id=str(collection.pk))
    assert event.after["version"] == 1 and event.after["status"] == row.status


def test_a_serving_version_judges_questions_of_its_collection_alone_until_it_is_retired(tmp_path, alice, finance):
    lumen, _ = collection_get_or_create(slug="lumen", group_names=["finance"])
    call_command("ingest", manual(tmp_path, entries=4), collection="lumen", verbosity=0)
    adapted = tmp_path / "adapted-answer"
    shutil.copytree(settings.CAIRN_ANSWER_MODEL, adapted)  # a distinct model directory serving as adapted
    JudgeVersion.objects.create(collection=lumen, version=1, status=JudgeVersion.Status.SERVING,
                                answer_model=str(adapted))  # fmt: skip
    loaded = lambda: (verifiers.CrossEncoderAnswerJudge, str(adapted)) in verifiers._instances  # noqa: E731
    verifiers._instances.pop((verifiers.CrossEncoderAnswerJudge, str(adapted)), None)

    assert judges_for(user=alice, collection_ids=None) == ("", "")  # alice reads finance and lumen
    question_answer(user=alice, question="What is the default value of cache_pages_0?", mode="fast")
    assert not loaded()  # two collections searched: the shipped judges, one scale for both

    assert judges_for(user=alice, collection_ids=[lumen.id]) == (str(adapted), "")
    state = question_answer(user=alice, question="What is the default value of cache_pages_0?", mode="fast",
                            collections=["lumen"])  # fmt: skip
    assert loaded() and state.generation.found
    # Outside the answer, the shipped judge is what every caller gets again.
    assert verifiers.get_answer_judge() is verifiers._loaded(verifiers.CrossEncoderAnswerJudge,
                                                             settings.CAIRN_ANSWER_MODEL)  # fmt: skip

    # A web host that cannot see the adapted model answers with the shipped one instead of failing.
    JudgeVersion.objects.filter(collection=lumen).update(answer_model=str(tmp_path / "elsewhere"))
    assert judges_for(user=alice, collection_ids=[lumen.id]) == ("", "")
    assert question_answer(user=alice, question="What is the default value of cache_pages_0?", mode="fast",
                           collections=["lumen"]).generation.found  # fmt: skip

    call_command("adapt", collection="lumen", retire=1, verbosity=0)
    assert JudgeVersion.objects.get(collection=lumen).status == JudgeVersion.Status.RETIRED
    assert judges_for(user=alice, collection_ids=[lumen.id]) == ("", "")
    assert AuditEvent.objects.filter(action="collection.judges_retire", object_id=str(lumen.pk)).count() == 1


def test_adapting_what_cannot_be_adapted_is_a_clear_error_or_a_version_kept_back(tmp_path):
    with pytest.raises(CommandError, match="--collection: no collection 'nowhere'"):
        call_command("adapt", collection="nowhere")
    collection, _ = collection_get_or_create(slug="lumen", group_names=["lumen-readers"])
    with pytest.raises(CommandError, match="--passages: must be at least 1"):
        call_command("adapt", collection="lumen", passages=0)
    with pytest.raises(CommandError, match="--retire: lumen has no judges v3"):
        call_command("adapt", collection="lumen", retire=3)
    call_command("ingest", manual(tmp_path, entries=4), collection="lumen", verbosity=0)
    with override_settings(CAIRN_OPENAI_BASE_URL=""):
        call_command("adapt", collection="lumen", no_teacher=True, verbosity=0)  # nothing cached: too few
    call_command("adapt", collection="lumen", no_teacher=True, verbosity=0)  # each run is the next version
    assert list(collection.judge_versions.values_list("version", flat=True)) == [2, 1]
    row = JudgeVersion.objects.get(collection=collection, version=2)
    assert row.status == JudgeVersion.Status.KEPT_BACK and "adapting needs" in row.figures["why"]
    reader = User.objects.create_user("lumen-reader")
    reader.groups.add(*collection.groups.all())
    assert judges_for(user=reader, collection_ids=None) == ("", "")  # kept back: the shipped judges


def test_an_ingest_that_changes_enough_text_queues_one_adaptation_and_a_second_task_finds_it_done(tmp_path, settings):
    from django_q.models import OrmQ

    from pipeline.judge_adaptation import ADAPT_TASK, changed_share, judges_adapt_task

    collection, _ = collection_get_or_create(slug="lumen", group_names=["lumen-readers"])
    settings.CAIRN_ADAPT_CHANGED_SHARE = 0.0
    call_command("ingest", manual(tmp_path, entries=4), collection="lumen", verbosity=0)
    assert OrmQ.objects.count() == 0  # off by default: adapting is `manage.py adapt`
    settings.CAIRN_ADAPT_CHANGED_SHARE = 0.5
    call_command("ingest", manual(tmp_path, entries=5, page="more.md", first=4), collection="lumen", verbosity=0)
    queued = [q.task for q in OrmQ.objects.all()]
    assert [(t["func"], t["args"]) for t in queued] == [(ADAPT_TASK, (collection.id,))]

    assert judges_adapt_task(collection.id).startswith("lumen v1: kept_back")  # nothing cached: too few questions
    assert changed_share(collection) == 0.0
    assert judges_adapt_task(collection.id) == "adapted since"  # the same sync's second task
    assert collection.judge_versions.count() == 1
