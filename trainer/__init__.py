"""The built-in single-machine trainer and evaluator (``gem train``, ``gem eval``, ``gem view``).

Multi-turn REINFORCE with any registered advantage estimator (ReBN by default) on a local
Hugging Face model, with PyTorch and transformers, on CPU or one GPU. Install with
``pip install 'gem-adapters[local]'``. It is a trainer of its own, not a bridge to a training
library, so it stands beside :mod:`gem_core` rather than among :mod:`gem_adapters`.

Shared by every command:

* :mod:`~gem_trainer.cli`, :mod:`~gem_trainer.plugin`: the commands and the plugin that registers them;
* :mod:`~gem_trainer.config`: training settings and their validation;
* :mod:`~gem_trainer.models`: the model and tokenizer (the built-in SmolLM2 included);
* :mod:`~gem_trainer.model_calls`: how a transformers model is called, whichever version is installed;
* :mod:`~gem_trainer.metrics`: episode statistics, the metrics log and the learning curve;
* :mod:`~gem_trainer.trackers`: reporting runs to TensorBoard, W&B, trackio and MLflow (``--report-to``);
* :mod:`~gem_trainer.runtime`: CPU settings applied before torch loads.

One subpackage per concern:

* :mod:`gem_trainer.decoding`: sampling responses from the model (a policy for vector environments);
* :mod:`gem_trainer.training`: episodes to samples, the loss, memory sizing, the loop, checkpoints;
* :mod:`gem_trainer.evaluation`: scoring a local model or an OpenAI-compatible endpoint, comparisons;
* :mod:`gem_trainer.viewing`: the static page of a run's episodes.
"""
