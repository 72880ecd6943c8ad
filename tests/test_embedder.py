"""The embedder: one instance per process, and a query fast path that agrees with batched encoding."""

from corpus.embedder import get_embedder


def test_the_single_text_fast_path_matches_batched_embeddings():
    embedder = get_embedder()
    texts = [
        "who got the first nobel prize in physics",
        "A",
        "The committee reviewed the proposal in full and approved its budget. "
        * 40,  # past 256 tokens: truncated alike
    ]
    batched = embedder.embed(texts + ["padding partner"])[: len(texts)]
    for text, expected in zip(texts, batched):
        single = embedder.embed([text])[0]
        assert single.shape == (384,)
        assert float(single @ expected) > 0.99999
