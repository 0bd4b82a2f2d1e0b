"""The ``terminal`` pack: tasks solved in a sandboxed shell, graded by hidden tests.

* :mod:`~gem_envs.terminal.plugin`: registers the ids.
* :mod:`~gem_envs.terminal.env`: the terminal environments.
* :mod:`~gem_envs.terminal.tasks`: terminal-bench and Harbor task folders (those that ship with
  GEM are in ``tasks/``).
* :mod:`~gem_envs.terminal.sandbox`: a bubblewrap sandbox holding a persistent shell;
  :mod:`~gem_envs.terminal.supervisor` runs inside it.
* :mod:`~gem_envs.terminal.container`: tasks in podman or docker containers.
* :mod:`~gem_envs.terminal.test_script`: tasks' test scripts, run offline.
* :mod:`~gem_envs.terminal.pytest_kit`: the test tools supplied to test runs, installed from
  :mod:`~gem_envs.terminal.wheelhouse`, with :mod:`~gem_envs.terminal.pytest_launcher` as their
  ``pytest``; :mod:`~gem_envs.terminal.cache` locks their entries in GEM's cache folder.
* :mod:`~gem_envs.terminal.exploits`: what an agent may leave behind, for the reward-hacking probe.
"""

