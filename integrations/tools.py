"""What Cairn offers an agent: `search`, the passages for a question as the gate judged them, and
`ask`, a verified answer as /api/v1/query gives it. Plain functions of a user and the caller's
arguments, in Django's world (the ORM, the models): the MCP transports (integrations/mcp_server.py)
call them off their event loop. Both go through pipeline.services.query_state, so a question
searches only what its asker may read, and a collection they may not read is refused as one that
does not exist."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from common.exceptions import CairnError
from corpus.originals import place
from corpus.selectors import chunks_readable_by
from pipeline.api import QueryApi, recorded_answer
from pipeline.services import query_state
from pipeline.stages import QueryState, embed_query, pipeline_run, rank, refine, retrieve, verify


class ToolInputSerializer(QueryApi.QueryInputSerializer):
    """The query API's own checks (question length, top_k, collection slugs, mode), so that a tool
    refuses exactly what /api/v1/query refuses. No generator (the server's choice), no streaming
    (a tool answers once) and no conversation: an agent keeps its own, and asks what it means."""

    generator = None
    stream = None
    conversation_id = None


INPUTS = tuple(ToolInputSerializer().fields)


def tool_input(arguments: dict) -> dict:
    """The validated arguments, or a CairnError naming the first field at fault."""
    if unknown := sorted(set(arguments) - set(INPUTS)):
        raise CairnError(unknown[0], f"unknown argument; the arguments are {', '.join(INPUTS)}")
    data = ToolInputSerializer(data=arguments)
    if not data.is_valid():
        field, errors = next(iter(data.errors.items()))
        raise CairnError(field, first_message(errors))
    return dict(data.validated_data)


def first_message(errors) -> str:
    """DRF's first message for a field: a list of strings, or per item of a list ({0: [...]})."""
    while isinstance(errors, dict | list):
        errors = next(iter(errors.values())) if isinstance(errors, dict) else errors[0]
    return str(errors)


# The forward path up to the refined evidence: no external search (an agent searches the web
# itself), no answer written or recorded.
SEARCH_STAGES = (embed_query, retrieve, rank, verify, refine)


def search(user: AbstractBaseUser, arguments: dict) -> dict:
    """The passages Cairn finds for a question, best ranked first, each with the gate's verdict."""
    state = query_state(user=user, **tool_input(arguments))
    for stage in SEARCH_STAGES:
        stage(state)
    return {"question": state.question, "action": str(state.action or ""), "passages": passages(state)}


def passages(state: QueryState) -> list[dict]:
    corpus = [c for c in state.candidates if c.hit is not None]
    # Through the one gate to chunks again: where a passage sits, and a chunk retracted since the
    # search read it (or no longer readable) is left out rather than shown.
    chunks = chunks_readable_by(user=state.user).filter(id__in=[c.hit.chunk_id for c in corpus])
    chunks = chunks.select_related("document__collection", "document__original").in_bulk()
    found = []
    for candidate in corpus:
        chunk = chunks.get(candidate.hit.chunk_id)
        if chunk is None:
            continue
        where = place(chunk)
        found.append({
            "n": candidate.n, "chunk_id": chunk.id, "document_id": chunk.document_id, "title": candidate.title,
            "source": candidate.source, "collection": chunk.document.collection.name, "text": candidate.text,
            "bucket": str(candidate.bucket), "trust": round(candidate.trust, 4),
            "relevance": None if candidate.relevance is None else round(candidate.relevance, 4),
            "strips": [s.text for s in candidate.strips if s.kept],
            "location_label": where["location_label"], "original_url": where["original_url"],
        })  # fmt: skip
    return found


def ask(user: AbstractBaseUser, arguments: dict) -> dict:
    """A verified answer, run and recorded as /api/v1/query runs and records it (the same response
    id reads it back there, and feedback on it counts), with its citations' sources."""
    state = pipeline_run(query_state(user=user, **tool_input(arguments)))
    answer = recorded_answer(state)
    evidence = {e["n"]: e for e in answer["evidence"]}
    citations = [
        {
            "n": c["n"], "origin": c["origin"], "chunk_id": c["chunk_id"], "title": evidence[c["n"]]["title"],
            "source": evidence[c["n"]]["source"], "collection": evidence[c["n"]]["collection"], "strips": c["strips"],
            "location_label": c["location_label"], "original_url": c["original_url"],
        }
        for c in answer["citations"]
    ]  # fmt: skip
    return {
        "response_id": answer["response_id"], "question": answer["question"], "answer": answer["answer"],
        "outcome": answer["outcome"], "found": answer["found"], "confidence": answer["confidence"],
        "mode": answer["mode"], "citations": citations,
    }  # fmt: skip


def search_text(result: dict) -> str:
    """`search`'s result for a reader: each passage with its verdict, where it is, what was kept."""
    if not result["passages"]:
        return "No passages found in the collections you can read."
    blocks = []
    for p in result["passages"]:
        where = ", ".join(filter(None, [p["collection"], p["location_label"], p["source"]]))
        relevance = "" if p["relevance"] is None else f", relevance {p['relevance']:.2f}"
        kept = " ".join(p["strips"]) or p["text"]
        blocks.append(f"[{p['n']}] {p['title']} ({where})\n{p['bucket']}, trust {p['trust']:.2f}{relevance}\n{kept}")
    return "\n\n".join(blocks)


def ask_text(result: dict) -> str:
    """`ask`'s result for a reader: the answer, how sure, and its sources by number."""
    confidence = "" if result["confidence"] is None else f", confidence {result['confidence']:.2f}"
    lines = [result["answer"], "", f"Outcome: {result['outcome']}{confidence}"]
    if result["citations"]:
        lines += ["", "Sources:"]
        for c in result["citations"]:
            where = ", ".join(filter(None, [c["collection"], c["location_label"], c["source"]]))
            lines.append(f"[{c['n']}] {c['title']} ({where})")
    lines += ["", f"Response id: {result['response_id']}"]
    return "\n".join(lines)
