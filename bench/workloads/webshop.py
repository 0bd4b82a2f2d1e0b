"""Workload: WebShop reset and step latency, and resident memory, on the sample GEM ships and on
a generated catalogue in upstream's file format (100,000 products by default).

The catalogue is generated at bench time under ``bench/webshop-N`` in GEM's cache folder
(``~/.cache/gem-adapters``, see :func:`gem_core.cache.cache_dir`; never committed) and its database and search index are built on first use, beside it; the
build is timed apart (``webshop_open_s_*``: the first open builds, later ones only open) and is not part of the latency. Each episode is a
reset then a fixed walk: a search for the goal's own words, a click on the first result, its
first option, its description, back, and buy; the search step and the click steps are timed
apart (a search runs BM25 over the catalogue, a click reads one product). Latencies are medians over ``--episodes``
episodes; memory is the process's peak resident set after the episodes (the build runs in a
child process, so its peak does not count).

The reference's WebShop needs a Java runtime, pyserini's Lucene index, faiss and the
``axon-rl/webshop`` Hugging Face dataset, none of which can be had offline: ``--impl reference``
exits with the runner's no-counterpart code. It documents no latency; its pull request 111
reports eight environment copies fitting in 512 GB of CPU memory.

Run as ``python bench/workloads/webshop.py --impl ours [--quick] [--products N]``; the last line
of output is the JSON of the metrics.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORDS = ("organic wireless leather cotton waterproof portable vintage bamboo steel ceramic travel "
         "mini large soft heavy duty natural smart classic slim").split()
NOUNS = ("lamp shirt shoe tea shampoo deodorant bag bottle chair pillow blanket charger speaker "
         "watch wallet jacket mug candle towel backpack").split()
COLORS = ("black white navy blue red green grey pink olive beige").split()
SIZES = ("small medium large x-large 8 ounce 16 ounce pack of 2").split(" ")


def generate_catalogue(folder: Path, count: int, seed: int = 0) -> Path:
    """Write ``count`` invented products, their attributes and one human instruction per
    product, in upstream's three file formats, streaming (bounded memory)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    with open(folder / "items_shuffle.json", "w") as products, open(folder / "items_ins_v2.json", "w") as attrs, \
            open(folder / "items_human_ins.json", "w") as human:
        for f, opening in ((products, "["), (attrs, "{"), (human, "{")):
            f.write(opening)
        for i in range(count):
            asin = f"B{i:09d}"
            noun, features = rng.choice(NOUNS), rng.sample(WORDS, 3)
            name = f"{' '.join(features).title()} {noun.title()} Model {i}"
            colors, sizes = rng.sample(COLORS, 3), rng.sample(SIZES, 2)
            price = round(rng.uniform(5, 120), 2)
            product = {
                "asin": asin, "category": "bench", "query": noun, "name": name,
                "product_category": f"Home › {noun.title()}s › {features[0].title()}",
                "full_description": f"A {' '.join(features)} {noun}. " * 8, "pricing": f"${price}",
                "images": [], "small_description": [f"{w.title()} {noun}" for w in features],
                "customization_options": {"color": [{"value": c} for c in colors],
                                          "size": [{"value": s} for s in sizes]},
            }
            attributes = [f"{w}" for w in features]
            sep = "," if i else ""
            products.write(sep + json.dumps(product))
            attrs.write(sep + json.dumps(asin) + ":" + json.dumps(
                {"attributes": attributes, "instruction": f"i want a {features[0]} {noun}",
                 "instruction_attributes": attributes[:2]}))
            human.write(sep + json.dumps(asin) + ":" + json.dumps([{
                "asin": asin, "instruction": f"i need a {features[0]} {features[1]} {noun} in {colors[0]}, {sizes[0]}",
                "instruction_attributes": attributes[:2], "instruction_options": [colors[0], sizes[0]]}]))
        for f, closing in ((products, "]"), (attrs, "}"), (human, "}")):
            f.write(closing)
    return folder


def episode(env, seed: int) -> tuple[float, list[float], float]:
    """One reset and a fixed walk; its reset time, step times and reward."""
    start = time.perf_counter()
    env.reset(seed=seed)
    reset_s = time.perf_counter() - start
    goal = env.goal
    steps, reward = [], 0.0
    actions = [f"search[{goal['instruction_text'][:80]}]"]
    for action in actions + ["first", "option", "click[description]", "click[< prev]", "click[buy now]"]:
        clickables = env.available_actions()["clickables"]
        if action == "first":
            products = [c for c in clickables if c not in ("back to search", "next >", "< prev")]
            action = f"click[{products[0]}]" if products else "click[back to search]"
        elif action == "option":
            options = [c for c in clickables if c not in ("back to search", "< prev", "description", "features",
                                                          "reviews", "buy now")]
            action = f"click[{options[0]}]" if options else "click[description]"
        start = time.perf_counter()
        _, reward, terminated, truncated, _ = env.step(action)
        steps.append(time.perf_counter() - start)
        if terminated or truncated:
            break
    return reset_s, steps, reward


def measure(data: dict, episodes: int) -> dict:
    import gem_core

    env = gem_core.make("webshop:train-text", **data)
    resets, searches, clicks = [], [], []
    for seed in range(episodes):
        reset_s, step_s, _ = episode(env, seed)
        resets.append(reset_s)
        searches.append(step_s[0])
        clicks.extend(step_s[1:])
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"reset_ms": 1000 * statistics.median(resets), "search_ms": 1000 * statistics.median(searches),
            "click_ms": 1000 * statistics.median(clicks), "rss_mb": rss_mb}


def _label(count: int) -> str:
    return f"{count // 1000}k" if count >= 1000 else str(count)


def main() -> None:
    from _protocol import no_counterpart, parser as workload_parser  # not at the top: tests import this module

    parser = workload_parser(__doc__, "fewer episodes and 10,000 products")
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--products", type=int, default=None, help="size of the generated catalogue (default 100,000)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # internal: one measurement, in a child
    args = parser.parse_args()
    if args.impl == "reference":
        no_counterpart("The reference's WebShop needs Java, pyserini and a Hugging Face dataset: not runnable offline.")
    episodes = args.episodes or (5 if args.quick else 30)
    if args.measure:
        print(json.dumps(measure(json.loads(args.measure), episodes)))
        return
    count = args.products or (10_000 if args.quick else 100_000)
    from gem_envs.webshop.plugin import SAMPLE_DIR

    from gem_core.cache import cache_dir

    folder = cache_dir("bench", f"webshop-{count}")
    if not (folder / "items_human_ins.json").is_file():
        generate_catalogue(folder, count)
    metrics = {}
    for label, data in (("sample", {"data_dir": SAMPLE_DIR, "split": "all"}), (_label(count), {"data_dir": str(folder)})):
        start = time.perf_counter()  # the first make builds the database and index (once per file version)
        build = subprocess.run([sys.executable, "-c", "import gem_core, json, sys, resource; "
                                "gem_core.make('webshop:train-text', **json.loads(sys.argv[1])); "
                                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)", json.dumps(data)],
                               capture_output=True, text=True, check=True)
        build_s = time.perf_counter() - start
        child = subprocess.run([sys.executable, __file__, "--measure", json.dumps(data), "--episodes", str(episodes)],
                               capture_output=True, text=True, check=True)
        result = json.loads(child.stdout.strip().splitlines()[-1])
        metrics[f"webshop_reset_ms_{label}"] = {"value": result["reset_ms"], "unit": "ms", "better": "lower"}
        metrics[f"webshop_search_step_ms_{label}"] = {"value": result["search_ms"], "unit": "ms", "better": "lower"}
        metrics[f"webshop_click_step_ms_{label}"] = {"value": result["click_ms"], "unit": "ms", "better": "lower"}
        metrics[f"webshop_rss_mb_{label}"] = {"value": result["rss_mb"], "unit": "MB", "better": "lower"}
        metrics[f"webshop_open_s_{label}"] = {"value": build_s, "unit": "s", "better": "lower"}
        metrics[f"webshop_open_peak_rss_mb_{label}"] = {"value": float(build.stdout.strip().splitlines()[-1]),
                                                        "unit": "MB", "better": "lower"}
    print(json.dumps({"metrics": metrics}))


if __name__ == "__main__":
    main()
