"""Registers the ``vision`` pack: generated visual tasks (``vision:*``, offline), language games
played from a picture of their board (multi-turn, with the ``board_image`` wrapper), and
``math:Geometry3K`` (the Hugging Face dataset ``hiyouga/geometry3k``)."""

from gem_core import hookimpl

_GRIDS = "gem_envs.vision.grids:ReasoningGymGridEnv"

#: id -> (reasoning-gym task, what the image shows)
GRID_SETS = {
    "vision:Maze-v0": ("maze", "a maze; the answer is the length of the shortest path"),
    "vision:MiniSudoku-v0": ("mini_sudoku", "a 4x4 Sudoku to solve"),
    "vision:RectangleCount-v0": ("rectangle_count", "overlapping rectangles to count"),
}


#: Multi-turn games played from a picture of the board: the game id's name, module, class, and the
#: settings of that game id (the same game, seen differently).
BOARD_GAMES = (
    ("Sudoku-v0-easy", "sudoku", "SudokuEnv", dict(clues=10, max_turns=15, scale=4)),
    ("Minesweeper-v0-easy", "minesweeper", "MinesweeperEnv", dict(rows=5, cols=5, num_mines=5, max_turns=25)),
    ("TowerofHanoi-v0-easy", "tower_of_hanoi", "TowerofHanoiEnv", dict(num_disks=3, max_turns=10)),
)


@hookimpl
def gem_register_wrappers(register):
    register("board_image", "gem_envs.vision.boards:board_image",
             description="A game's board (info['suffix']) drawn as an image each turn (option: cell).")


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
    for name, module, cls, options in BOARD_GAMES:
        register(f"vision:{name}", f"gem_envs.game.{module}:{cls}", wrappers=["board_image"],
                 description=f"game:{name} with its board shown as an image each turn.", **options)
    register("math:Geometry3K", "gem_envs.vision.geometry3k:VisualMathEnv", split="train",  # its dataset by default
             env_id="math:Geometry3K", offline=False,
             description="Geometry problems with diagrams (hiyouga/geometry3k), graded by math-verify.")


@hookimpl
def gem_register_keys(register):
    register("digit-labels", "sklearn:datasets/data/digits.csv.gz",
             description="scikit-learn's handwritten digits with their labels (DigitArithmetic's answers).")
