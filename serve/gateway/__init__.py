"""The gateway: between a harness GEM does not run and the model's inference server, an
OpenAI-compatible endpoint that records the exact prompt and sampled token ids of every call."""
