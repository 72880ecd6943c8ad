"""The backward path: an answer proposed as a corpus addition (proposals.py), validated by a worker
(validation.py: grounding, attribution, relevance, novelty, the loop guard; the request path only
enqueues, tasks.py), decided by curators (review.py, api.py, admin.py) or the auto-publish policy,
published as a document resting on its evidence and carried along when that evidence changes
(lineage.py); with what the path learns: critiques, the experience log, lessons and gaps."""
