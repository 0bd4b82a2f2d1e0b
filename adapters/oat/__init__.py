"""GEM on oat: an actor that plays GEM environments in oat's multi-turn PPO
(:mod:`gem_adapters.oat.rollout`), a learner that computes GEM's advantages in oat's learner
process (:mod:`gem_adapters.oat.advantages`), and a launcher with oat's own command line plus GEM's
options (``python -m gem_adapters.oat.train``). ``gem oat config`` prints that command. Install as
docs/adapters/oat.md says (oat declares Python < 3.11 and pins GPU packages)."""
