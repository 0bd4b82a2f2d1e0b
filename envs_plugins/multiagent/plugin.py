"""Registers the ``multiagent`` pack. Each game has three ids: ``multiagent:NAME-v0`` (the
multi-agent environment itself), ``-selfplay`` (one policy plays every seat) and ``-vs-bot`` (the
policy plays a random seat against the game's scripted bots; ``gem play`` and ``gem eval`` report
a win rate on these). The customer-service task has ``multiagent:RetailService-v0`` and
``-assistant`` (the policy is the assistant; the customer is scripted, or a model given as ``user=``)."""

from gem_core import hookimpl

_PACK = "gem_envs.multiagent"

GAMES = (
    ("TicTacToe", "tictactoe:TicTacToeEnv", "Tic-tac-toe for two."),
    ("Nim", "nim:NimEnv", "Nim for two: three piles of 1-7 stones; taking the last stone wins."),
    ("KuhnPoker", "kuhn_poker:KuhnPokerEnv", "Kuhn poker for two: J, Q, K, one betting round."),
    ("PrisonersDilemma", "prisoners_dilemma:PrisonersDilemmaEnv",
     "The iterated prisoner's dilemma for two, 5 simultaneous rounds."),
    ("LiarsDice", "liars_dice:LiarsDiceEnv", "Liar's dice for three, two dice each; the last player left wins."),
)


@hookimpl
def gem_register_envs(register):
    for name, target, summary in GAMES:
        entry_point = f"{_PACK}.{target}"
        register(f"multiagent:{name}-v0", entry_point, description=f"{summary} Multi-agent (dict actions).")
        register(f"multiagent:{name}-v0-selfplay", entry_point, wrappers=["self_play"],
                 description=f"{summary} One policy plays every seat.")
        register(f"multiagent:{name}-v0-vs-bot", entry_point, wrappers=["versus"],
                 description=f"{summary} Against the scripted bot, from a random seat.")
    service = f"{_PACK}.customer_service:CustomerServiceEnv"
    register("multiagent:RetailService-v0", service,
             description="Customer service with store tools under a policy; a scripted user, or a model "
                         "(user={model: NAME, base_url: URL}). Multi-agent.")
    register("multiagent:RetailService-v0-assistant", service, wrappers=[("versus", {"seat": "assistant"})],
             description="Customer service with store tools under a policy: you are the assistant; a scripted "
                         "user, or a model (user={model: NAME, base_url: URL}).")


@hookimpl
def gem_register_keys(register):
    register("retail-tasks", "gem_envs.multiagent:customer_service_tasks.json",
             description="The customer-service tasks with the actions and outputs that solve them.")
