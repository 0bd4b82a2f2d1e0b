"""Reading upstream WebShop's data files, in their published format, without holding them whole.

* the product file (``items_shuffle_1000.json`` or the full ``items_shuffle.json``): a JSON
  array of scraped products (``asin``, ``name``, ``full_description``, ``small_description``,
  ``pricing``, ``customization_options``, ``category``, ``query``, ``product_category``, ...);
* the attribute file (``items_ins_v2_1000.json`` / ``items_ins_v2.json``): an object from asin to
  ``{"attributes": [...], "instruction": ..., "instruction_attributes": [...]}``;
* the human instruction file (``items_human_ins.json``): an object from asin to a list of
  ``{"instruction": ..., "instruction_attributes": [...], "instruction_options": [...]}``.

:func:`stream_json` yields the items of a top-level array (or the pairs of a top-level object)
one at a time, so a 5 GB product file is read in bounded memory. :func:`product_record` turns a
raw product into the fields the shop uses, as upstream's ``load_products`` does.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from gem_core.errors import DataNotFoundError, GemError

_CHUNK = 1 << 20
_DECODER = json.JSONDecoder()
_NOT_PRICE = re.compile(r"[^\d.]")


class WebShopDataError(GemError, ValueError):
    """A data file that is not in upstream WebShop's format."""


def stream_json(path: str | os.PathLike[str]) -> Iterator[Any]:
    """The items of the top-level JSON array in ``path``, or ``(key, value)`` pairs of its
    top-level object, read a chunk at a time."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"WebShop: {str(path)!r} is not a file.")
    with path.open(encoding="utf-8") as f:
        reader = _Reader(f, path)
        opening = reader.punctuation("[{")
        closing = "]" if opening == "[" else "}"
        if reader.peek() == closing:
            return
        while True:
            if opening == "[":
                yield reader.value()
            else:
                key = reader.value()
                reader.punctuation(":")
                yield key, reader.value()
            if reader.punctuation("," + closing) == closing:
                return


class _Reader:
    """A JSON text read a chunk at a time: punctuation, and whole values with ``raw_decode``."""

    def __init__(self, file, path: Path):
        self.file, self.path = file, path
        self.buffer, self.position, self.eof = "", 0, False

    def _more(self, size: int = _CHUNK) -> bool:
        if self.eof:
            return False
        more = self.file.read(size)
        self.eof = not more
        self.buffer = self.buffer[self.position:] + more
        self.position = 0
        return bool(more)

    def peek(self) -> str:
        while True:
            while self.position < len(self.buffer) and self.buffer[self.position] in " \t\r\n":
                self.position += 1
            if self.position < len(self.buffer) or not self._more():
                return self.buffer[self.position:self.position + 1]

    def punctuation(self, chars: str) -> str:
        found = self.peek()
        if not found or found not in chars:
            raise WebShopDataError(f"{self.path}: not in upstream WebShop's format: expected one of "
                                   f"{chars!r}, found {found or 'the end of the file'!r}.")
        self.position += 1
        return found

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                item, end = _DECODER.raw_decode(self.buffer, self.position)
                if end < len(self.buffer) or self.eof:  # a number cut by the buffer's end reads short
                    self.position = end
                    return item
            except ValueError as e:
                if self.eof:
                    raise WebShopDataError(f"{self.path}: not valid JSON ({e}).") from None
            self._more(max(_CHUNK, len(self.buffer)))


def parse_pricing(pricing: Any) -> list[float]:
    """Upstream's prices of a product: ``"$12.99"`` -> ``[12.99]``, ``"$10.00 - $15.00"`` ->
    ``[10.0, 15.0]``, nothing -> ``[100.0]``."""
    if isinstance(pricing, list) and all(isinstance(p, (int, float)) for p in pricing) and pricing:
        return [float(p) for p in pricing[:2]]
    if not isinstance(pricing, str) or not pricing:
        return [100.0]
    prices = []
    for part in pricing.split("$")[1:]:
        try:
            prices.append(float(Decimal(_NOT_PRICE.sub("", part))))
        except InvalidOperation:
            continue
    return prices[:2] or [100.0]


def product_record(raw: dict[str, Any], attributes: list[str] | None) -> dict[str, Any] | None:
    """The fields the shop uses of one raw product, or None for a product upstream skips (an
    asin that is ``nan`` or longer than 10 characters)."""
    asin = raw.get("asin")
    if not isinstance(asin, str) or asin == "nan" or len(asin) > 10:
        return None
    pricing = parse_pricing(raw.get("pricing"))
    price_tag = f"${pricing[0]}" if len(pricing) == 1 else f"${pricing[0]} to ${pricing[1]}"
    options: dict[str, list[str]] = {}
    for name, contents in (raw.get("customization_options") or {}).items():
        if not contents:
            continue
        options[name.lower()] = [str(c.get("value", "")).strip().replace("/", " | ").lower()
                                 for c in contents if isinstance(c, dict)]
    bullets = raw.get("small_description")
    bullets = [str(b) for b in bullets] if isinstance(bullets, list) else [str(bullets or "")]
    return {
        "asin": asin,
        "Title": str(raw.get("name") or ""),
        "Description": str(raw.get("full_description") or ""),
        "BulletPoints": bullets,
        "pricing": pricing,
        "Price": price_tag,
        "options": options,
        "Attributes": list(attributes) if attributes else ["DUMMY_ATTR"],
        "Rating": str(raw.get("average_rating") or "N.A."),
        "Reviews": [],
        "category": str(raw.get("category") or ""),
        "query": str(raw.get("query") or "").lower().strip(),
        "product_category": str(raw.get("product_category") or ""),
        "name": str(raw.get("name") or ""),
    }


def search_text(product: dict[str, Any]) -> str:
    """What the search engine indexes of a product, as upstream's index does: the title, the
    description, the first bullet point and the options."""
    options = ", and ".join(f"{name}: {', '.join(values)}" for name, values in product["options"].items())
    bullets = product["BulletPoints"]
    return " ".join([product["Title"], product["Description"], bullets[0] if bullets else "", options]).lower()
