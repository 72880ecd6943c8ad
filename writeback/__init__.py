"""The backward path: after an answer is recorded, a worker validates the write-back it proposed
(grounding, attribution, relevance, novelty, the loop guard) and curators decide on it. The
request path only enqueues (writeback.tasks); the proposals themselves and publishing live in
corpus/writebacks.py, beside the documents they become."""
