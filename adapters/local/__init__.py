"""The built-in single-machine trainer and evaluator (``gem train``, ``gem eval``).

Multi-turn REINFORCE with any registered advantage estimator (ReBN by default) on a local
Hugging Face model, with PyTorch and transformers, on CPU or one GPU. Install with
``pip install 'gem-adapters[local]'``. Modules, in the order data flows:

* :mod:`~gem_adapters.local.config`: settings and their validation;
* :mod:`~gem_adapters.local.models`: the model and tokenizer (the built-in SmolLM2 included);
* :mod:`~gem_adapters.local.sampling`: a policy that samples responses from the model;
* :mod:`~gem_adapters.local.rollout`: seeds, groups, episodes to training samples;
* :mod:`~gem_adapters.local.loss`: the token-level REINFORCE loss;
* :mod:`~gem_adapters.local.trainer`: the training loop, checkpoints, metrics;
* :mod:`~gem_adapters.local.evaluate`: scoring a local model or an OpenAI-compatible endpoint.
"""
