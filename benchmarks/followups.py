"""Follow-up questions (benchmarks/followups/): gold in a stated answer for each follow-up, asked as
a reader types it, against the same need asked standalone.

    .venv/bin/python benchmarks/followups.py [--set apache --set sqlite]

Cairn keeps no conversation yet: a follow-up ("and keep only the last 5 files?") is asked alone,
as typed. That is the baseline a conversation must lift towards the standalone figure. Every
question is asked through /api/v1/query, `fast` mode, top_k 8, within its manual's collection, as
docs_qa.py asks. A turn is right when its answer is stated and holds every one of its gold strings
(benchmarks/followups/README.md). Reported per manual and over both: first turns, follow-ups
standalone and as typed, and the ratio of the two. Writes benchmarks/results/followups.json and .png.
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

    def right(question: str, gold: list[str]) -> bool:
        body = client.post(
            "/api/v1/query",
            {"question": question, "mode": "fast", "top_k": 8, "collections": [collection.slug]},
            content_type="application/json",
        ).json()
        return bool(body.get("found")) and holds_all(body.get("answer", ""), gold)

    conversations = [json.loads(line) for line in (HERE / f"{name}.jsonl").read_text().splitlines() if line]
    first = standalone = typed = followups = 0
    for conversation in tqdm(conversations, desc=f"asking {name}", unit="conversation"):
        opening, *later = conversation["turns"]
        first += right(opening["question"], opening["gold"])
        for turn in later:
            followups += 1
            standalone += right(turn["standalone"], turn["gold"])
            typed += right(turn["question"], turn["gold"])
    return {"conversations": len(conversations), "first_turns_right": first / len(conversations),
            "followups": followups, "standalone_right": standalone / followups, "as_typed_right": typed / followups,
            "as_typed_over_standalone": typed / standalone if standalone else None}  # fmt: skip


def plot(result: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(result["sets"])
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (key, label) in enumerate([("standalone_right", "follow-up asked standalone"),
                                      ("as_typed_right", "follow-up as typed, no conversation")]):  # fmt: skip
        ax.bar(x + (i - 0.5) * 0.4, [100 * result["sets"][n][key] for n in names], 0.4, label=label)
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
    followups = sum(s["followups"] for s in sets.values())
    standalone = sum(s["standalone_right"] * s["followups"] for s in sets.values())
    typed = sum(s["as_typed_right"] * s["followups"] for s in sets.values())
    result = {"sets": sets, "followups": followups, "standalone_right": standalone / followups,
              "as_typed_right": typed / followups,
              "as_typed_over_standalone": typed / standalone if standalone else None}  # fmt: skip
    print(json.dumps(result, indent=1))
    plot(result)
    print(f"wrote {write_result('followups', result)} and {RESULTS / 'followups.png'}")


if __name__ == "__main__":
    main()
