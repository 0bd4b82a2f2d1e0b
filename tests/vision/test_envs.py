"""The visual environments: deterministic images, grading, and Geometry3K's loader."""

from __future__ import annotations

import hashlib

import pytest

import gem_core
from gem_core.errors import GemError
from gem_core.images import IMAGE, png_bytes
from gem_envs.vision.answers import boxed_number
from tests.helpers import offline_data_error

PIL = pytest.importorskip("PIL.Image")
pytest.importorskip("sklearn")

GENERATED = ["vision:Geometry-v0", "vision:DigitArithmetic-v0", "vision:Maze-v0", "vision:MiniSudoku-v0",
             "vision:RectangleCount-v0"]


def right_answer(env) -> str:
    inner = env.unwrapped
    return str(inner.entry["answer"]) if hasattr(inner, "entry") else str(inner.answer)


def wrong_answer(answer: str) -> str:
    if "\n" in answer:  # a Sudoku grid: swap its first two rows
        rows = answer.split("\n")
        return "\n".join([rows[1], rows[0], *rows[2:]])
    return str(int(answer) + 1)


def digest(info) -> str:
    return hashlib.sha256(png_bytes(info["images"][0])).hexdigest()


def test_every_vision_id_is_registered_and_offline():
    from gem_envs.vision.plugin import BOARD_GAMES

    ids = {s.id for s in gem_core.list_envs("vision:*")}
    assert ids == set(GENERATED) | {f"vision:{name}" for name, *_ in BOARD_GAMES}
    assert all(gem_core.spec(i).offline for i in ids)


@pytest.mark.parametrize("env_id", GENERATED)
def test_the_same_seed_draws_the_same_png_and_seeds_differ(env_id):
    env = gem_core.make(env_id)
    observation, info = env.reset(seed=3)
    assert observation.count(IMAGE) == 1 and len(info["images"]) == 1
    assert info["images"][0].mode == "RGB"
    first = digest(info)
    assert digest(gem_core.make(env_id).reset(seed=3)[1]) == first
    assert len({digest(env.reset(seed=seed)[1]) for seed in range(4, 10)}) > 1


@pytest.mark.parametrize("env_id", GENERATED)
def test_right_answers_score_1_wrong_0_and_no_box_is_a_format_error(env_id):
    env = gem_core.make(env_id)
    for seed in range(3):
        env.reset(seed=seed)
        answer = right_answer(env)
        _, reward, terminated, _, info = env.step(f"So the answer is \\boxed{{{answer}}}.")
        assert (reward, terminated, info["correct"], info["format_error"]) == (1.0, True, True, False)
        env.reset(seed=seed)
        _, reward, _, _, info = env.step(f"\\boxed{{{wrong_answer(answer)}}}")
        assert (reward, info["correct"], info["format_error"]) == (0.0, False, False)
        env.reset(seed=seed)
        _, reward, _, _, info = env.step("I think it is " + answer)
        assert (reward, info["format_error"]) == (0.0, True)
    env.reset(seed=0)
    assert env.step(env.sample_random_action())[2]  # a well-formed action ends the episode


def test_documented_image_sizes():
    assert gem_core.make("vision:Geometry-v0").reset(seed=0)[1]["images"][0].size == (256, 256)
    digits = gem_core.make("vision:DigitArithmetic-v0").reset(seed=0)[1]["images"][0]
    assert digits.size[1] == 48 and (digits.size[0] - 16) % 32 == 0
    assert gem_core.make("vision:MiniSudoku-v0").reset(seed=0)[1]["images"][0].size == (168, 168)
    maze = gem_core.make("vision:Maze-v0")
    image = maze.reset(seed=0)[1]["images"][0]
    grid = maze.unwrapped.entry["metadata"]["grid"]
    assert image.size == (20 * len(grid[0]), 20 * len(grid))


def test_digit_arithmetic_is_computed_from_the_digit_labels():
    from gem_envs.vision.env import handwritten_digits

    images, labels = handwritten_digits()
    env = gem_core.make("vision:DigitArithmetic-v0", max_digits=1)
    _, info = env.reset(seed=11)
    picture = info["images"][0].convert("L")
    found = []
    for slot in (0, 2):  # the two one-digit operands, either side of the operator
        crop = picture.crop((8 + 32 * slot, 8, 8 + 32 * (slot + 1), 40)).resize((8, 8), PIL.NEAREST)
        ink = [[round((255 - crop.getpixel((x, y))) * 16 / 255) for x in range(8)] for y in range(8)]
        found.append({int(labels[i]) for i in range(len(labels)) if (images[i] == ink).all()})
    answer = env.unwrapped.answer
    assert any(a + b == answer or a - b == answer or a * b == answer
               for a in found[0] for b in found[1])
    with pytest.raises(GemError, match="max_digits"):
        gem_core.make("vision:DigitArithmetic-v0", max_digits=0)


@pytest.mark.parametrize(("text", "value"), [
    ("\\boxed{60^\\circ}", 60), ("\\boxed{60°}", 60), ("\\boxed{ 1,234 }", 1234), ("\\boxed{-7}", -7),
    ("\\boxed{\\frac{1}{2}}", 0.5), ("\\boxed{5 cm}", 5), ("\\boxed{x}", None), ("no box 5", None),
])
def test_boxed_numbers(text, value):
    assert boxed_number(text) == value


# --- Geometry3K ------------------------------------------------------------------------------

def geometry_rows(count: int = 3) -> list[dict]:
    return [{"problem": f"{IMAGE}Find x if the side is {i}.", "answer": str(2 * i),
             "images": [PIL.new("RGB", (10 + i, 12), (i * 40, 0, 0))]} for i in range(count)]


def test_geometry3k_from_in_memory_rows_is_graded_by_the_math_grader():
    env = gem_core.make("math:Geometry3K", dataset=geometry_rows())
    observation, info = env.reset(index=2)
    assert observation.startswith(f"{IMAGE}Find x if the side is 2.") and "\\boxed{}" in observation
    assert info["images"][0].size == (12, 12) and info["images"][0].getpixel((0, 0)) == (80, 0, 0)
    assert env.step("The answer is \\boxed{4}.")[1] == 1.0
    env.reset(index=1)
    assert env.step("\\boxed{3}")[1] == 0.0
    env.reset(index=1)
    _, reward, _, _, info = env.step("two")
    assert reward == 0.0 and info["format_error"]


def test_geometry3k_from_a_local_parquet_file(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = geometry_rows(4)
    features = datasets.Features({"problem": datasets.Value("string"), "answer": datasets.Value("string"),
                                  "images": datasets.Sequence(datasets.Image())})
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(tmp_path / "train.parquet"))
    env = gem_core.make("math:Geometry3K", path=str(tmp_path / "train.parquet"))
    for index, row in enumerate(rows):
        observation, info = env.reset(index=index)
        assert observation.startswith(row["problem"])
        assert png_bytes(info["images"][0]) == png_bytes(row["images"][0])
        assert env.step(f"\\boxed{{{row['answer']}}}")[1] == 1.0


def test_geometry3k_adds_placeholders_when_the_text_has_none_and_rejects_non_images():
    rows = [{"problem": "Find x.", "answer": "1", "images": [PIL.new("L", (4, 4))]}]
    observation, info = gem_core.make("math:Geometry3K", dataset=rows).reset(index=0)
    assert observation.startswith(f"{IMAGE}\nFind x.") and info["images"][0].mode == "RGB"
    with pytest.raises(GemError, match="row 0 has an image that cannot be read"):
        gem_core.make("math:Geometry3K", dataset=[{**rows[0], "images": [42]}]).reset(index=0)


def test_geometry3k_offline_without_data_says_how_to_get_it(tmp_path):
    message = offline_data_error("math:Geometry3K", tmp_path)
    assert message.startswith("math:Geometry3K reads the Hugging Face dataset 'hiyouga/geometry3k'")
    assert "hf download hiyouga/geometry3k --repo-type dataset" in message
