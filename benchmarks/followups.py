"""Follow-up questions (benchmarks/followups/): gold in a stated answer for each follow-up, asked as
a reader types it in its conversation, against the same need asked standalone.

    .venv/bin/python benchmarks/followups.py [--set apache --set sqlite]

Each conversation is asked turn by turn as typed, each follow-up with the conversation_id of the
turn before, so Cairn rewrites it into the standalone question it means (pipeline/conversations.py).
Each follow-up is also asked as its writer's standalone question, and as typed with no conversation
(what Cairn did before conversations). Every question goes through /api/v1/query, `fast` mode (so
the rules rewrite: no LLM), top_k 8, within its manual's collection, as docs_qa.py asks. A turn is
right when its answer is stated and holds every one of its gold strings
(benchmarks/followups/README.md); beside it, whether a VERIFIED passage holds them all. Reported
per manual and over both, with every follow-up's rewrite. Writes benchmarks/results/followups.json
and .png.
"""

from __future__ import annotations

import argparse
import json
import os

from _common import RESULTS, ROOT, django_setup, write_result

HERE = ROOT / "benchmarks" / "followups"
SETS = ("apache", "sqlite")


def holds_all(text: str, gold: list[str]) -> bool:
    text = " ".join(text.lower().split())
    return all(" ".join(g.lower().split()) in text for g in gold)


def measure(name: str) -> dict:
    from django.test import Client
    from tqdm import tqdm

    from docs_qa import SETS as DOC_SETS
    from docs_qa import manual_reader

    collection, user, _questions = manual_reader(DOC_SETS[name])
    client = Client()
    client.force_login(user)

    def asked(question: str, gold: list[str], **extra) -> dict:
        body = client.post(
            "/api/v1/query",
            {"question": question, "mode": "fast", "top_k": 8, "collections": [collection.slug], **extra},
            content_type="application/json",
        ).json()
        verified = " ".join(e["text"] for e in body.get("evidence", []) if e["bucket"] == "VERIFIED")
        return {"question": body.get("question", ""), "conversation_id": body.get("conversation_id"),
                "right": bool(body.get("found")) and holds_all(body.get("answer", ""), gold),
                "verified": holds_all(verified, gold)}  # fmt: skip

    conversations = [json.loads(line) for line in (HERE / f"{name}.jsonl").read_text().splitlines() if line]
    rows, first = [], 0
    for conversation in tqdm(conversations, desc=f"asking {name}", unit="conversation"):
        opening, *later = conversation["turns"]
        before = asked(opening["question"], opening["gold"])
        first += before["right"]
        for turn in later:
            followed = asked(turn["question"], turn["gold"], conversation_id=before["conversation_id"])
            alone = asked(turn["standalone"], turn["gold"])
            rows.append({"id": conversation["id"], "question": turn["question"], "answered_as": followed["question"],
                         "in_conversation": followed["right"], "in_conversation_verified": followed["verified"],
                         "standalone": alone["right"], "standalone_verified": alone["verified"],
                         "as_typed_alone": asked(turn["question"], turn["gold"])["right"]})  # fmt: skip
            before = followed
    return summary(rows) | {"conversations": len(conversations), "first_turns_right": first / len(conversations),
                            "turns": rows}  # fmt: skip


MEASURES = ("in_conversation", "standalone", "as_typed_alone", "in_conversation_verified", "standalone_verified")


def summary(rows: list[dict]) -> dict:
    right = {key: sum(r[key] for r in rows) for key in MEASURES}
    return {"followups": len(rows), **{f"{key}_right": right[key] / len(rows) for key in MEASURES},
            "in_conversation_over_standalone": right["in_conversation"] / right["standalone"]
            if right["standalone"] else None}  # fmt: skip


def plot(result: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(result["sets"])
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(7, 4))
    bars = [("standalone_right", "asked standalone"), ("in_conversation_right", "in its conversation"),
            ("as_typed_alone_right", "as typed, no conversation")]  # fmt: skip
    for i, (key, label) in enumerate(bars):
        ax.bar(x + (i - 1) * 0.27, [100 * result["sets"][n][key] for n in names], 0.27, label=label)
    ax.set_xticks(x, [f"{n} ({result['sets'][n]['followups']})" for n in names])
    ax.set_ylabel("gold in a stated answer (%)")
    ax.set_title("Follow-up questions")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "followups.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", choices=SETS, help="Which manuals (default: both).")
    args = parser.parse_args()
    os.environ.setdefault("CAIRN_THROTTLE_QUERY", "100000/minute")  # a benchmark, not a user
    django_setup()
    sets = {name: measure(name) for name in args.set or SETS}
    result = {"sets": sets, **summary([row for s in sets.values() for row in s["turns"]])}
    print(json.dumps({k: v for k, v in result.items() if k != "sets"}, indent=1))
    plot(result)
    print(f"wrote {write_result('followups', result)} and {RESULTS / 'followups.png'}")


if __name__ == "__main__":
    main()
