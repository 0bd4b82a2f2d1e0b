"""The ``code`` pack: write a program that passes hidden tests, run in the sandbox.

* :mod:`~gem_envs.code.plugin`: registers the ids.
* :mod:`~gem_envs.code.env`: the code environments.
* :mod:`~gem_envs.code.testcases`: problems and tests, read from the datasets' formats.
* :mod:`~gem_envs.code.extraction`: the program in what an LLM wrote.
* :mod:`~gem_envs.code.runner`: a submission against its tests, in one sandboxed process.
* :mod:`~gem_envs.code.pool`: warm sandboxed test harnesses; :mod:`~gem_envs.code.harness` runs
  inside them, and :mod:`~gem_envs.code.candidates` runs assert tests' submissions apart from them.
* :mod:`~gem_envs.code.exploits`: submissions that solve nothing, for the reward-hacking probe.
"""
