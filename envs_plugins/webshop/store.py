"""The shop's data on disk: products, goals and the search index, built once from upstream's
files and kept next to them, so an episode reads only what it shows.

:meth:`Shop.open` streams the product, attribute and instruction files into an SQLite
database and builds a BM25 index (``bm25s``) of the products, both in a folder beside the
product file (``<products>.gem/``, or under ``webshop/`` in GEM's cache folder,
:func:`gem_core.cache.cache_dir`, where that folder cannot be written). They are rebuilt when a source file changes (size or time). At run
time the index is memory-mapped and products are read from the database one at a time, so the
resident memory does not grow with the catalogue (measured in ``bench/workloads/webshop.py``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import shutil
import sqlite3
import threading
from bisect import bisect
from collections import OrderedDict
from itertools import product as combinations
from pathlib import Path
from typing import Any

from gem_core.cache import cache_dir
from gem_core.errors import DataNotFoundError, MissingDependencyError
from gem_envs.webshop.files import WebShopDataError, product_record, search_text, stream_json
from gem_envs.webshop.reward import PRICE_RANGE

FORMAT = 1  # bump when the database or the index changes shape
SEARCH_RETURN_N = 50  # results of one search, as upstream
GOAL_SEED = 233  # upstream shuffles its goals with random.seed(233)
SPLITS = ("train", "test", "eval", "all")
_BATCH = 2000


class Shop:
    """Products (by asin), their prices, the goals of each split and the search engine."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._db = sqlite3.connect(folder / "shop.sqlite", check_same_thread=False)
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, dict[str, Any]] = OrderedDict()
        # Loaded now, not at the first search: importing bm25s draws from the global generators.
        self._index = _bm25s().BM25.load(str(folder / "bm25"), mmap=True, load_vocab=True)
        meta = dict(self._db.execute("SELECT key, value FROM meta"))
        self.goal_count = int(meta["goals"])
        self.product_count = int(meta["products"])

    @classmethod
    def open(cls, products: str | os.PathLike[str], attributes: str | os.PathLike[str] | None = None,
             instructions: str | os.PathLike[str] | None = None, *, human_goals: bool = True) -> Shop:
        """The shop of these files, built on first use (see the module docstring)."""
        sources = {"products": products, "attributes": attributes, "instructions": instructions}
        for role, path in sources.items():
            if path is not None and not Path(path).expanduser().is_file():
                raise DataNotFoundError(f"WebShop: the {role} file {str(path)!r} does not exist. {HOW_TO_GET}")
        if attributes is None:
            raise DataNotFoundError(f"WebShop needs the attribute file (items_ins_v2*.json). {HOW_TO_GET}")
        if human_goals and instructions is None:
            raise DataNotFoundError(f"WebShop's human goals need the instruction file (items_human_ins.json), "
                                    f"or pass human_goals=False. {HOW_TO_GET}")
        stamp = {role: _stamp(path) for role, path in sources.items() if path is not None}
        stamp.update(human_goals=human_goals, format=FORMAT)
        return _open_cached(json.dumps(stamp, sort_keys=True), str(products), str(attributes),
                            str(instructions) if instructions else None, human_goals)

    # -- reading -------------------------------------------------------------------------------------
    def product(self, asin: str) -> dict[str, Any] | None:
        key = asin.upper()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            row = self._db.execute("SELECT doc FROM products WHERE asin = ?", (key,)).fetchone()
            record = json.loads(row[0]) if row else None
            if record is not None:
                self._cache[key] = record
                if len(self._cache) > 512:
                    self._cache.popitem(last=False)
            return record

    def price(self, asin: str) -> float:
        with self._lock:
            row = self._db.execute("SELECT price FROM products WHERE asin = ?", (asin.upper(),)).fetchone()
        return row[0]

    def goal(self, index: int) -> dict[str, Any]:
        with self._lock:
            row = self._db.execute("SELECT doc FROM goals WHERE idx = ?", (index,)).fetchone()
        return json.loads(row[0])

    @functools.cached_property
    def cumulative_weights(self) -> list[float]:
        with self._lock:
            weights = [w for (w,) in self._db.execute("SELECT weight FROM goals ORDER BY idx")]
        total, cumulative = 0.0, []
        for w in weights:
            total += w
            cumulative.append(total)
        return cumulative

    def split(self, name: str) -> range:
        """The goal indices of a split: upstream's first 500 shuffled goals are ``test``, the next
        1,000 ``eval`` and the rest ``train``; a file with under 2,000 goals keeps a tenth
        (at least one) for ``test`` and ``eval`` is empty."""
        n = self.goal_count
        if name == "all":
            return range(n)
        if n >= 2000:
            return {"test": range(0, 500), "eval": range(500, 1500), "train": range(1500, n)}[name]
        k = max(1, n // 10)
        return {"test": range(0, k), "eval": range(k, k), "train": range(k, n)}[name]

    def search(self, keywords: str, n: int = SEARCH_RETURN_N) -> list[str]:
        """The asins of the best ``n`` products for ``keywords``, best first; products sharing no
        word with the query are left out."""
        bm25s = _bm25s()
        tokens = bm25s.tokenize([keywords], stopwords="en", return_ids=False, show_progress=False)
        index = self._index
        vocabulary = index.vocab_dict
        known = [[t for t in tokens[0] if t in vocabulary]]
        if not known[0]:
            return []
        with self._lock:
            ids, scores = index.retrieve(known, k=min(n, self.product_count), show_progress=False, n_threads=1)
            found = [int(i) + 1 for i, s in zip(ids[0], scores[0]) if s > 0]
            if not found:
                return []
            marks = ",".join("?" * len(found))
            rows = dict(self._db.execute(f"SELECT id, asin FROM products WHERE id IN ({marks})", found))
        return [rows[i] for i in found if i in rows]

    def close(self) -> None:
        self._db.close()


HOW_TO_GET = (
    "Pass data_dir= a folder with upstream WebShop's items_shuffle*.json, items_ins_v2*.json and "
    "items_human_ins.json (its setup.sh downloads them: the 1,000-product set or the full 1.18 M), "
    "or products=, attributes= and instructions= paths. webshop:sample-* ids play the sample GEM ships.")


def find_files(data_dir: str | os.PathLike[str]) -> dict[str, Path | None]:
    """Upstream's files in ``data_dir``, preferring the full files to the 1,000-product subset."""
    folder = Path(data_dir).expanduser()
    if not folder.is_dir():
        raise DataNotFoundError(f"WebShop: data_dir={str(folder)!r} is not a folder. {HOW_TO_GET}")

    def first(*names: str) -> Path | None:
        for pattern in names:
            found = sorted(folder.glob(pattern))
            if found:
                return found[0]
        return None

    products = first("items_shuffle.json", "items_shuffle_*.json")
    if products is None:
        raise DataNotFoundError(f"WebShop: no items_shuffle*.json in {str(folder)!r}. {HOW_TO_GET}")
    suffix = products.stem.removeprefix("items_shuffle")  # "" or "_1000": pair the files
    return {"products": products,
            "attributes": first(f"items_ins_v2{suffix}.json", "items_ins_v2.json", "items_ins_v2_*.json"),
            "instructions": first("items_human_ins*.json")}


@functools.lru_cache(maxsize=4)
def _open_cached(stamp: str, products: str, attributes: str, instructions: str | None, human_goals: bool) -> Shop:
    import fcntl

    folder = _folder_for(Path(products), stamp)
    ready = folder / "ready.json"
    with open(folder / ".lock", "w") as lock:  # one process builds; the others wait, then read
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (ready.is_file() and ready.read_text() == stamp):
            ready.unlink(missing_ok=True)
            _build(folder, stamp, Path(products), Path(attributes), Path(instructions) if instructions else None,
                   human_goals)
        return Shop(folder)


def _folder_for(products: Path, stamp: str) -> Path:
    beside = products.with_name(products.name + ".gem")
    if _writable(beside):
        return beside
    # a read-only data folder (a shared mount, an installed package): the user's cache
    folder = cache_dir("webshop") / hashlib.sha256(f"{products.resolve()}".encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(exist_ok=True)
        probe = folder / ".probe"
        probe.write_text("")
        probe.unlink()
        return True
    except OSError:
        return False


def _build(folder: Path, stamp: str, products: Path, attributes: Path, instructions: Path | None,
           human_goals: bool) -> None:
    partial = folder / "building"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    db = sqlite3.connect(partial / "shop.sqlite")
    db.executescript("""
        PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE attrs (asin TEXT PRIMARY KEY, doc TEXT);
        CREATE TABLE products (id INTEGER PRIMARY KEY, asin TEXT UNIQUE, price REAL, doc TEXT);
        CREATE TABLE goals (idx INTEGER PRIMARY KEY, weight REAL, doc TEXT);
    """)
    _load_attributes(db, attributes)
    texts = _load_products(db, products)
    _build_index(partial / "bm25", texts)
    goals = _human_goals(db, instructions) if human_goals else _synthetic_goals(db)
    random.Random(GOAL_SEED).shuffle(goals)
    db.executemany("INSERT INTO goals VALUES (?, ?, ?)",
                   ((i, g.pop("weight"), json.dumps(g)) for i, g in enumerate(goals)))
    count = db.execute("SELECT COUNT(*) FROM products").fetchone()[0]
    if not goals:
        raise WebShopDataError(f"WebShop: no goal could be made from {instructions or attributes}: no instruction "
                               "names a product of the product file with attributes.")
    db.executemany("INSERT INTO meta VALUES (?, ?)", [("goals", str(len(goals))), ("products", str(count))])
    db.commit()
    db.close()
    for name in ("shop.sqlite", "bm25"):
        target = folder / name
        if target.is_dir():
            shutil.rmtree(target)
        target.unlink(missing_ok=True)
        (partial / name).rename(target)
    partial.rmdir()
    (folder / "ready.json").write_text(stamp)


def _load_attributes(db: sqlite3.Connection, path: Path) -> None:
    batch = []
    for asin, entry in stream_json(path):
        if not isinstance(entry, dict):
            raise WebShopDataError(f"{path}: the entry of {asin!r} is not an object; is this items_ins_v2*.json?")
        batch.append((asin, json.dumps(entry)))
        if len(batch) >= _BATCH:
            db.executemany("INSERT OR REPLACE INTO attrs VALUES (?, ?)", batch)
            batch = []
    db.executemany("INSERT OR REPLACE INTO attrs VALUES (?, ?)", batch)


def _load_products(db: sqlite3.Connection, path: Path):
    """Insert the products; return a file of their search texts, one per line, in id order."""
    texts = open(db.execute("PRAGMA database_list").fetchone()[2] + ".texts", "w+", encoding="utf-8")
    seen: set[str] = set()
    batch = []
    for number, raw in enumerate(stream_json(path)):
        if not isinstance(raw, dict):
            raise WebShopDataError(f"{path}: item {number} is not an object; is this items_shuffle*.json?")
        asin = raw.get("asin")
        if asin in seen:
            continue
        row = db.execute("SELECT doc FROM attrs WHERE asin = ?", (asin,)).fetchone() if isinstance(asin, str) else None
        attrs = json.loads(row[0]) if row else {}
        record = product_record(raw, attrs.get("attributes"))
        if record is None:
            continue
        seen.add(asin)
        record["instruction_text"] = attrs.get("instruction")
        record["instruction_attributes"] = attrs.get("instruction_attributes")
        batch.append((len(seen), asin, _price(record), json.dumps(record)))
        texts.write(search_text(record).replace("\n", " ") + "\n")
        if len(batch) >= _BATCH:
            db.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", batch)
            batch = []
    db.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", batch)
    if not seen:
        raise WebShopDataError(f"{path} holds no product.")
    texts.flush()
    texts.seek(0)
    return texts


def _build_index(folder: Path, texts) -> None:
    bm25s = _bm25s()
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en")
    ids: list[list[int]] = []
    chunk: list[str] = []
    for line in texts:
        chunk.append(line)
        if len(chunk) >= 10_000:
            ids.extend(tokenizer.tokenize(chunk, update_vocab=True, return_as="ids", show_progress=False))
            chunk = []
    if chunk:
        ids.extend(tokenizer.tokenize(chunk, update_vocab=True, return_as="ids", show_progress=False))
    texts.close()
    os.unlink(texts.name)
    index = bm25s.BM25()
    index.index(bm25s.tokenization.Tokenized(ids=ids, vocab=tokenizer.get_vocab_dict()), show_progress=False)
    index.save(str(folder), show_progress=False)


def _price(record: dict[str, Any]) -> float:
    """A product's price: its one price, or a draw between its two (upstream draws from the
    global generator; here the draw is seeded by the asin, so it is the same every run)."""
    pricing = record["pricing"]
    if len(pricing) == 1:
        return pricing[0]
    return random.Random(record["asin"]).uniform(*pricing[:2])


def _price_upper(rng: random.Random, price: float) -> tuple[float, str]:
    bins = [p for p in PRICE_RANGE if p > price][:4]
    if len(bins) < 2:
        return 1000000.0, ""
    _, upper = sorted(rng.sample(bins, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def _goal(record: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"asin": record["asin"], "category": record["category"], "query": record["query"],
            "name": record["name"], "product_category": record["product_category"], **fields}


def _human_goals(db: sqlite3.Connection, path: Path) -> list[dict[str, Any]]:
    rng = random.Random(GOAL_SEED)
    goals = []
    for asin, instructions in stream_json(path):
        row = db.execute("SELECT price, doc FROM products WHERE asin = ?", (asin,)).fetchone()
        if row is None or not isinstance(instructions, list):
            continue
        price, record = row[0], json.loads(row[1])
        for entry in instructions:
            attributes = entry.get("instruction_attributes") or [] if isinstance(entry, dict) else []
            if not attributes:
                continue
            upper, price_text = _price_upper(rng, price)
            goals.append(_goal(record, instruction_text=str(entry.get("instruction", "")).strip(".") + price_text,
                               attributes=attributes, price_upper=upper,
                               goal_options=entry.get("instruction_options") or [], weight=1.0))
    return goals


def _synthetic_goals(db: sqlite3.Connection) -> list[dict[str, Any]]:
    rng = random.Random(GOAL_SEED)
    goals, counts = [], {}
    for price, doc in db.execute("SELECT price, doc FROM products ORDER BY id"):
        record = json.loads(doc)
        text, attributes = record.get("instruction_text"), record.get("instruction_attributes")
        if not text or not attributes:
            continue
        upper, price_text = _price_upper(rng, price)
        names = sorted(record["options"])
        for values in combinations(*(record["options"][n] for n in names)):
            chosen = dict(zip(names, values))
            options = ", and ".join(f"{k}: {v}" for k, v in chosen.items())
            goal = _goal(record, instruction_text=f"{text}{' with ' + options if options else ''}{price_text}",
                         attributes=attributes, price_upper=upper, goal_options=chosen)
            goal["name"] = record["Title"]  # as upstream's synthetic goals
            goals.append(goal)
            for a in attributes:
                counts[a] = counts.get(a, 0) + 1
    for goal in goals:
        goal["weight"] = sum(1.0 / counts[a] for a in goal["attributes"]) / len(goal["attributes"])
    return goals


def _stamp(path: str | os.PathLike[str]) -> list[Any]:
    stat = Path(path).expanduser().stat()
    return [str(Path(path).expanduser().resolve()), stat.st_size, stat.st_mtime_ns]


def _bm25s():
    try:
        import bm25s
        import bm25s.tokenization
    except ImportError:
        raise MissingDependencyError("WebShop's search engine", "bm25s", "tools") from None
    return bm25s
