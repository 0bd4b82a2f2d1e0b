"""Registers the ``math`` pack: training sets (``math:*``), evaluation sets (``eval:*``) and
generated problems that work offline (``math:*-v0``), each also as ``<id>+Tool`` with the Python
tool wrapper."""

from gem_core import hookimpl

_DATASET = "gem_envs.math.env:MathEnv"
_GENERATED = "gem_envs.math.env:GeneratedMathEnv"

#: id -> (Hugging Face dataset, what it holds)
TRAINING_SETS = {
    "math:ASDiv2K": ("axon-rl/ASDIV-2k", "ASDiv arithmetic word problems"),
    "math:GSM8K": ("axon-rl/GSM-8k", "GSM8K grade-school word problems"),
    "math:Math12K": ("axon-rl/MATH-12k", "MATH competition problems"),
    "math:Math8K-3to5": ("axon-rl/MATH-lvl3to5-8k", "MATH problems of levels 3 to 5"),
    "math:Orz57K": ("axon-rl/ORZ-57k", "Open-Reasoner-Zero math problems"),
    "math:DeepScaleR40K": ("axon-rl/DeepScaleR-40K", "DeepScaleR competition problems"),
}
#: id -> (split of axon-rl/math-eval, what it holds)
EVALUATION_SETS = {
    "eval:MATH500": ("math", "MATH500"),
    "eval:AMC": ("amc", "AMC competition problems"),
    "eval:AIME24": ("aime24", "AIME 2024"),
    "eval:OlympiadBench": ("olympiad_bench", "OlympiadBench"),
    "eval:Minerva": ("minerva", "Minerva math"),
}
EVALUATION_DATASET = "axon-rl/math-eval"
#: id -> (reasoning-gym task, what it generates)
GENERATED_SETS = {
    "math:Arithmetic-v0": ("basic_arithmetic", "integer arithmetic expressions"),
    "math:ChainSum-v0": ("chain_sum", "sums and differences of several integers"),
    "math:Products-v0": ("products", "products of integers"),
    "math:LinearEquations-v0": ("simple_equations", "linear equations in one unknown"),
    "math:GSMSymbolic-v0": ("gsm_symbolic", "GSM8K-style word problems"),
    "math:AnglesGeometry-v0": ("simple_geometry", "missing interior angles of polygons"),
}


#: What the ids import beyond GEM (module -> the extra that installs it).
DATASET_NEEDS = {"datasets": "envs", "math_verify": "envs"}
GENERATED_NEEDS = {"reasoning_gym": "envs", "math_verify": "envs"}

#: The wrapper of the ``+Tool`` variants: a Python tool, 5 calls, no reward for the calls themselves.
TOOL_WRAPPER = "python_tool_no_int_reward"


@hookimpl
def gem_register_envs(register):
    def register_with_tool(id_, entry_point, *, description, **kwargs):
        register(id_, entry_point, description=description, **kwargs)
        register(f"{id_}+Tool", entry_point, wrappers=(TOOL_WRAPPER,), **kwargs,
                 description=f"{description} With a Python tool ({TOOL_WRAPPER}).")

    graded = "graded by math-verify"
    for env_id, (dataset, what) in TRAINING_SETS.items():
        register_with_tool(env_id, _DATASET, dataset_name=dataset, split=None, env_id=env_id, offline=False,
                           requires=DATASET_NEEDS,
                           description=f"{what} ({dataset}), {graded}.")
    for env_id, (split, what) in EVALUATION_SETS.items():
        register_with_tool(env_id, _DATASET, dataset_name=EVALUATION_DATASET, split=split, shuffle=False,
                           env_id=env_id, offline=False, requires=DATASET_NEEDS,
                           description=f"{what} ({EVALUATION_DATASET}, split {split}), in order, {graded}.")
    for env_id, (task, what) in GENERATED_SETS.items():
        register_with_tool(env_id, _GENERATED, task=task, requires=GENERATED_NEEDS,
                           description=f"Generated {what} (reasoning-gym {task}), {graded}.")
