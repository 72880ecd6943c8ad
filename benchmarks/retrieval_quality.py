"""Retrieval quality on the NQ shared split: recall@k of the gold passage for hybrid, vector-only
and text-only search.

    .venv/bin/python benchmarks/retrieval_quality.py

The corpus is the split's 1,825 distinct gold Wikipedia passages, ingested by the app's own
ingestion (chunking, title-prefixed embeddings, generated tsvector) into collection `nq` of the
`cairn_bench` database; a re-run skips what is already there. Each of the 1,858 questions asks
through `chunk_search`, the function the query API uses; a hit is any chunk of the gold passage's
document. Writes benchmarks/results/retrieval_quality.json and retrieval_quality.png.
"""

from __future__ import annotations

from _common import cached_embeddings, django_setup, nq_corpus, nq_rows, write_result

MODES = {"hybrid": ("vector", "text"), "vector": ("vector",), "text": ("text",)}
KS = (1, 5, 10)


def main() -> None:
    django_setup()
    from tqdm import tqdm

    from corpus.selectors import chunk_search

    collection, user, gold = nq_corpus()
    rows = nq_rows()
    vectors = cached_embeddings("nq_questions", [r["question"] for r in rows])
    ranks: dict[str, list[int | None]] = {mode: [] for mode in MODES}
    for index, (row, vector) in enumerate(tqdm(list(zip(rows, vectors)), desc="asking", unit="q")):
        for mode, legs in MODES.items():
            hits = chunk_search(
                user=user,
                query_vector=vector,
                text=row["question"],
                limit=max(KS),
                collection_ids=[collection.id],
                legs=legs,
            )
            documents = list(dict.fromkeys(h.document_id for h in hits))  # overlapping chunks: first hit counts
            ranks[mode].append(documents.index(gold[index]) + 1 if gold[index] in documents else None)

    metrics = {}
    for mode, found in ranks.items():
        metrics[mode] = {f"recall@{k}": sum(r is not None and r <= k for r in found) / len(found) for k in KS}
        metrics[mode]["mrr@10"] = sum(1 / r for r in found if r) / len(found)
        print(mode.ljust(7), "  ".join(f"{name} {value:.3f}" for name, value in metrics[mode].items()))
    result = {"questions": len(rows), "passages": len(set(gold.values())), "metrics": metrics}
    print(f"wrote {write_result('retrieval_quality', result)}")
    plot(metrics)


def plot(metrics: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from _common import RESULTS

    fig, ax = plt.subplots(figsize=(7, 3.8))
    names = [f"recall@{k}" for k in KS] + ["mrr@10"]
    width = 0.8 / len(metrics)
    for i, (mode, values) in enumerate(metrics.items()):
        xs = [x + i * width for x in range(len(names))]
        bars = ax.bar(xs, [values[n] for n in names], width=width, label=mode)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.set_xticks([x + width for x in range(len(names))], names)
    ax.set_ylim(0, 1.05)
    ax.set_title("NQ shared split: gold passage retrieval (1,858 questions)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(RESULTS / "retrieval_quality.png", dpi=120)


if __name__ == "__main__":
    main()
