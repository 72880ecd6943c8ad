"""The training loop's batching: pure, no model. (Tests never train.)"""

import random

from pipeline.training import _length_grouped_batches


def test_batches_cover_every_pair_once_group_by_length_and_repeat_on_resume():
    pairs = [("word " * random.Random(i).randint(1, 200), "hypothesis", 0) for i in range(1000)]
    batches = _length_grouped_batches(pairs, 32, random.Random(5))
    assert sorted(i for batch in batches for i in batch) == list(range(1000))
    assert all(len(batch) <= 32 for batch in batches)
    assert batches == _length_grouped_batches(pairs, 32, random.Random(5))  # a resumed run sees the same batches
    spread = [max(len(pairs[i][0]) for i in b) - min(len(pairs[i][0]) for i in b) for b in batches]
    assert sum(spread) / len(spread) < 100  # random batches would span most of the 1,000-character range
