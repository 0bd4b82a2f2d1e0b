"""The token-faithfulness suite (TITO: token ids in, token ids out), shared by the core stage and
every adapter stage: an environment that echoes what it was told (:mod:`.echo`), a scripted
sampler that answers with adversarial token ids and records every call (:mod:`.script`), chat
templates with a tokenizer that holds their special tokens (:mod:`.templates`), and the checks
every path's trained sequences must pass (:mod:`.checks`)."""
