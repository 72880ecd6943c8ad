"""The judges: the models that read text for the request path and validation (relevance evaluator,
NLI model, answer judge), the grounding judgment built on them, and everything that makes them:
training data, the training loop, calibration (global and per collection), questions written from a
collection's own structure, model cards. A leaf under the pipeline: it imports `corpus` only."""
