"""The OpenAI-compatible endpoint, asked by OpenAI's own Python client against a running Cairn
(gunicorn through `manage.py serve`, as tests/test_serving.py runs it): the models, an answer
streamed and not, the same answer and citations as /api/v1/query, a follow-up in a chat, and the
errors a client reads. What Open WebUI needs is checked in docs/integrations.md."""

import openai
import pytest

from tests.test_serving import fast_answer, served, served_database  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db

QUESTION = "when does the cafeteria open"


@pytest.fixture(scope="module")
def cairn(served_database):  # noqa: F811 - the fixture imported above
    with served(CAIRN_THROTTLE_QUERY="1000/minute") as base:
        yield base, served_database


def client_of(cairn, key: str | None = None) -> openai.OpenAI:
    base, token = cairn
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key or token, max_retries=0, timeout=120)


def test_the_models_are_cairn_and_one_per_collection_the_caller_reads(cairn):
    assert [m.id for m in client_of(cairn).models.list()] == ["cairn", "cairn/handbook"]


def test_a_chat_gets_the_answer_and_citations_of_the_query_api_streamed_or_not(cairn):
    base, token = cairn
    asked = fast_answer(base, token, QUESTION)
    chat = client_of(cairn).chat.completions.create(
        model="cairn", messages=[{"role": "user", "content": QUESTION}], extra_body={"mode": "fast"}
    )
    content = chat.choices[0].message.content
    cairn_answer = chat.model_extra["cairn"]
    assert content.startswith(asked["answer"]) and "[1]" in content and "8 am" in content
    assert "\n\nSources:\n[1] Cafeteria (http://127.0.0.1:" in content and "/documents/" in content
    assert cairn_answer["answer"] == asked["answer"] and cairn_answer["response_id"] != asked["response_id"]
    cited = lambda answer: [(c["n"], c["chunk_id"]) for c in answer["citations"]]  # noqa: E731
    assert cited(cairn_answer) == cited(asked)

    chunks = list(
        client_of(cairn).chat.completions.create(
            model="cairn/handbook", messages=[{"role": "user", "content": QUESTION}], stream=True,
            extra_body={"mode": "fast"},
        )
    )  # fmt: skip
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert streamed == content
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert cited(chunks[-1].model_extra["cairn"]) == cited(asked)


def test_a_follow_up_in_a_chat_is_answered_as_the_question_it_means_in_the_same_conversation(cairn):
    client = client_of(cairn)
    messages = [{"role": "user", "content": QUESTION}]
    first = client.chat.completions.create(model="cairn", messages=messages, extra_body={"mode": "fast"})
    messages += [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "and when does it close?"},
    ]
    follow_up = client.chat.completions.create(model="cairn", messages=messages, extra_body={"mode": "fast"})
    content = follow_up.choices[0].message.content
    assert content.startswith(f"Answered: When does it close? ({QUESTION}?)\n\n") and "3 pm" in content
    assert follow_up.model_extra["cairn"]["conversation_id"] == first.model_extra["cairn"]["conversation_id"]


def test_errors_come_in_openais_shape_naming_what_is_wrong(cairn):
    with pytest.raises(openai.AuthenticationError):
        client_of(cairn, key="not-a-cairn-token").models.list()
    with pytest.raises(openai.NotFoundError, match="model"):
        client_of(cairn).chat.completions.create(model="cairn/hr", messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.BadRequestError, match="messages"):
        client_of(cairn).chat.completions.create(model="cairn", messages=[{"role": "assistant", "content": "Hi."}])
    with pytest.raises(openai.BadRequestError, match="messages"):
        client_of(cairn).chat.completions.create(model="cairn", messages=[{"role": "user", "content": "x" * 2001}])
