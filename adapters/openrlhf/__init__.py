"""GEM on OpenRLHF: an agent file that plays GEM environments through OpenRLHF's own multi-turn
agent executor with per-turn rewards, GEM's advantage estimators inside OpenRLHF's PPO trainer
(``python -m gem_adapters.openrlhf.train <OpenRLHF flags> --gem.estimator rebn``), and
``gem openrlhf config``, which writes the prompt dataset and the agent file and prints that command.
Install as docs/adapters/openrlhf.md says (OpenRLHF and deepspeed need their own pip steps)."""

#: Names the GEM estimator for every Ray worker of a run (set by ``gem_adapters.openrlhf.train``).
ESTIMATOR_VARIABLE = "GEM_OPENRLHF_ESTIMATOR"
