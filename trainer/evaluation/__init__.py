"""``gem eval``: scoring a policy on environments.

* :mod:`~gem_trainer.evaluation.evaluate`: a local model or an OpenAI-compatible chat endpoint;
* :mod:`~gem_trainer.evaluation.folder`: an evaluation's folder (settings, episodes, what is left);
* :mod:`~gem_trainer.evaluation.scores`: success, return, pass@k and best-of-k per environment;
* :mod:`~gem_trainer.evaluation.compare`: ``gem eval compare``, differences with bootstrap intervals.
"""
