"""The shop's pages and how they read: upstream WebShop's search, results, item, item detail
and purchase pages, each a list of elements rendered three ways.

* ``text``: upstream's simple text mode, every visible text joined by ``" [SEP] "``;
* ``text_rich``: one element a line, clickable ones as ``[button] x [button_]`` and chosen
  options (and products already opened) as ``[clicked button] x [clicked button_]``;
* ``html``: a small page with upstream's element ids and classes (``search_input``, ``btn``,
  ``product-link``, option radio inputs), for agents that read HTML.
"""

from __future__ import annotations

import html as markup
from dataclasses import dataclass

BACK_TO_SEARCH = "Back to Search"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BUY_NOW = "Buy Now"
DETAILS = ("Description", "Features", "Reviews")


@dataclass(frozen=True)
class Element:
    """One thing on a page: ``kind`` is ``text``, ``button``, ``product`` (a result's asin),
    ``option`` (a value of option ``group``) or ``search`` (the search box)."""

    kind: str
    text: str
    group: str = ""
    clicked: bool = False


def render(elements: list[Element], mode: str, instruction: str) -> str:
    if mode == "text":
        return " [SEP] ".join(["WebShop", "Instruction:", instruction]
                              + [e.text for e in elements])
    if mode == "text_rich":
        lines = [f"Instruction: {instruction}"]
        for e in elements:
            if e.kind in ("button", "product", "option", "search"):
                mark = "clicked button" if e.clicked else "button"
                lines.append(f"{'  ' if e.kind == 'option' else ''}[{mark}] {e.text} [{mark}_]")
            else:
                lines.append(e.text)
        return "\n".join(lines)
    return _html(elements, instruction)


def _html(elements: list[Element], instruction: str) -> str:
    body = [f'<div id="instruction-text"><h4>Instruction: {markup.escape(instruction)}</h4></div>']
    for e in elements:
        text = markup.escape(e.text)
        if e.kind == "search":
            body.append('<input id="search_input" type="text" name="search_query">'
                        f'<button type="submit" class="btn">{text}</button>')
        elif e.kind == "button":
            body.append(f'<button class="btn">{text}</button>')
        elif e.kind == "product":
            body.append(f'<a class="product-link">{text}</a>')
        elif e.kind == "option":
            checked = " checked" if e.clicked else ""
            body.append(f'<input type="radio" name="{markup.escape(e.group)}" value="{text}"{checked}>'
                        f"<label>{text}</label>")
        else:
            body.append(f"<p>{text}</p>")
    return "<html><head><title>WebShop</title></head><body>\n" + "\n".join(body) + "\n</body></html>"
