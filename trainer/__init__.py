"""The built-in single-machine trainer and evaluator (``gem train``, ``gem eval``).

Multi-turn REINFORCE with any registered advantage estimator (ReBN by default) on a local
Hugging Face model, with PyTorch and transformers, on CPU or one GPU. Install with
``pip install 'gem-adapters[local]'``. It is a trainer of its own, not a bridge to a training
library, so it stands beside :mod:`gem_core` rather than among :mod:`gem_adapters`. Modules, in the order
data flows:

* :mod:`~gem_trainer.config`: settings and their validation;
* :mod:`~gem_trainer.models`: the model and tokenizer (the built-in SmolLM2 included);
* :mod:`~gem_trainer.sampling`: a policy that samples responses from the model;
* :mod:`~gem_trainer.rollout`: seeds, groups, episodes to training samples;
* :mod:`~gem_trainer.loss`: the token-level REINFORCE loss;
* :mod:`~gem_trainer.trainer`: the training loop, checkpoints, metrics;
* :mod:`~gem_trainer.evaluate`: scoring a local model or an OpenAI-compatible endpoint.
"""
