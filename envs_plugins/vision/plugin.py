"""Registers the ``vision`` pack: generated visual tasks (``vision:*``, offline) and
``math:Geometry3K`` (the Hugging Face dataset ``hiyouga/geometry3k``)."""

from gem_core import hookimpl

from gem_envs.vision.geometry3k import DATASET

_GRIDS = "gem_envs.vision.grids:ReasoningGymGridEnv"

#: id -> (reasoning-gym task, what the image shows)
GRID_SETS = {
    "vision:Maze-v0": ("maze", "a maze; the answer is the length of the shortest path"),
    "vision:MiniSudoku-v0": ("mini_sudoku", "a 4x4 Sudoku to solve"),
    "vision:RectangleCount-v0": ("rectangle_count", "overlapping rectangles to count"),
}


@hookimpl
def gem_register_envs(register):
    register("vision:Geometry-v0", "gem_envs.vision.env:GeometryEnv",
             description="A drawn figure with labelled lengths or angles (hypotenuse, rectangle area or "
                         "perimeter, third angle); the answer is computed.")
    register("vision:DigitArithmetic-v0", "gem_envs.vision.env:DigitArithmeticEnv",
             description="Arithmetic (+, -, ×) written in scikit-learn's handwritten digits; the answer is "
                         "computed from the digits' labels.")
    for env_id, (task, what) in GRID_SETS.items():
        register(env_id, _GRIDS, name=task, size=500, seed=42,
                 description=f"reasoning-gym {task} drawn as an image ({what}), scored by reasoning-gym.")
    register("math:Geometry3K", "gem_envs.vision.geometry3k:VisualMathEnv", dataset_name=DATASET, split="train",
             env_id="math:Geometry3K", offline=False,
             description=f"Geometry problems with diagrams ({DATASET}), graded by math-verify.")
