"""GEM on verl: a ``gem`` agent loop with per-turn rewards, GEM's advantage estimators registered
inside verl, and ``gem verl config``, which writes a verl config and dataset for verl's own
launcher. Install with ``pip install "gem-adapters[verl]"``."""

AGENT_LOOP_NAME = "gem"  # the agent loop's name inside verl (rollout.agent.default_agent_loop)
HARNESS_LOOP_NAME = "gem_agent"  # the loop that runs an external agent program through GEM's gateway
