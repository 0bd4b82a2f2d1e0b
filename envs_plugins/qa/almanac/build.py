"""Writes the Almanac: a small encyclopedia of an invented archipelago, and questions about it.

Every place, person, invention and event here is fictional, so a model cannot answer from memory
and has to search the corpus; two-hop questions need two searches (the answer of the first names
what to look up next). Written for this project and licensed with it (Apache-2.0).

Run ``python -m gem_envs.qa.almanac.build`` to regenerate ``corpus.jsonl`` and
``questions.jsonl`` next to this file; the output depends on nothing but this file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHIPELAGO = "the Ostmere Isles"


@dataclass(frozen=True)
class Island:
    name: str
    area_km2: int
    capital: str
    sea: str
    discovered_by: str
    discovered_in: int
    feature: str


@dataclass(frozen=True)
class Town:
    name: str
    island: str
    founded: int
    founder: str
    river: str
    known_for: str
    population: int


@dataclass(frozen=True)
class Person:
    name: str
    born: int
    birthplace: str
    occupation: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Invention:
    name: str
    inventor: str
    year: int
    purpose: str
    material: str


@dataclass(frozen=True)
class River:
    name: str
    island: str
    length_km: int
    source: str
    mouth: str


@dataclass(frozen=True)
class Festival:
    name: str
    town: str
    month: str
    honours: str
    first_held: int
    the: bool = True  # "the Night of Horns", but "Salt Sunday"

    @property
    def called(self) -> str:
        return f"the {self.name}" if self.the else self.name


ISLANDS = (
    Island("Vashel", 412, "Tamsford", "the Grey Sound", "Halvard Brine", 1511, "salt marshes"),
    Island("Quillmoor", 268, "Carrow End", "the Grey Sound", "Merrit Osk", 1524, "chalk cliffs"),
    Island("Brannoch", 733, "Greythorn", "the Amber Sea", "Halvard Brine", 1509, "pine forests"),
    Island("Selvary", 155, "Pellum", "the Amber Sea", "Ysolde Karrow", 1537, "black sand beaches"),
    Island("Dunmarrow", 590, "Ashvale", "the Northern Reach", "Merrit Osk", 1530, "basalt hills"),
    Island("Orrin Isle", 97, "Kestrel Bay", "the Northern Reach", "Ysolde Karrow", 1542, "tidal caves"),
)

TOWNS = (
    Town("Tamsford", "Vashel", 1588, "Corvin Hale", "Lisk", "salt works", 41200),
    Town("Lirren", "Vashel", 1621, "Ottoline Crane", "Lisk", "reed baskets", 8300),
    Town("Ebbwick", "Vashel", 1656, "Bastian Foy", "Marrel", "oyster beds", 5100),
    Town("Carrow End", "Quillmoor", 1602, "Wendeline Orr", "Tessan", "its chalk quarries", 22750),
    Town("Mistral", "Quillmoor", 1647, "Bastian Foy", "Tessan", "windmills", 6900),
    Town("Yarrowgate", "Quillmoor", 1693, "Hesper Quayle", "Tessan", "a lighthouse school", 3400),
    Town("Greythorn", "Brannoch", 1575, "Joren Vale", "Brannock", "shipyards", 56800),
    Town("Fenholt", "Brannoch", 1612, "Seraphine Dell", "Brannock", "pine resin", 12900),
    Town("Oswin's Reach", "Brannoch", 1668, "Taddeo Quince", "Brannock", "a deep harbour", 7700),
    Town("Pellum", "Selvary", 1631, "Ilsa Marrow", "Vey", "glassmaking", 18400),
    Town("Rookhaven", "Selvary", 1674, "Taddeo Quince", "Vey", "rook colonies", 2600),
    Town("Calder Cross", "Selvary", 1705, "Alaric Penn", "Vey", "a horse market", 4800),
    Town("Ashvale", "Dunmarrow", 1596, "Anselm Thorne", "Dunn", "wool mills", 33100),
    Town("Brisk", "Dunmarrow", 1640, "Ilsa Marrow", "Dunn", "fog horns", 9600),
    Town("Teller's Hythe", "Dunmarrow", 1683, "Hesper Quayle", "Dunn", "a clock tower", 4100),
    Town("Kestrel Bay", "Orrin Isle", 1617, "Wendeline Orr", "Orle", "seabird watching", 11200),
    Town("Hollin", "Orrin Isle", 1661, "Taddeo Quince", "Orle", "holly groves", 1900),
    Town("Port Aldwen", "Orrin Isle", 1699, "Alaric Penn", "Orle", "a ferry to the mainland", 6200),
)

PEOPLE = (
    Person("Halvard Brine", 1478, "the mainland port of Seddon", "navigator"),
    Person("Merrit Osk", 1490, "the mainland port of Seddon", "navigator"),
    Person("Ysolde Karrow", 1503, "the mainland city of Aubrenne", "cartographer", ("Ysolde the Mapmaker",)),
    Person("Corvin Hale", 1551, "the mainland city of Aubrenne", "merchant"),
    Person("Joren Vale", 1540, "the mainland city of Aubrenne", "shipwright"),
    Person("Anselm Thorne", 1566, "the mainland port of Seddon", "wool trader"),
    Person("Wendeline Orr", 1578, "Greythorn", "surveyor"),
    Person("Ottoline Crane", 1589, "Tamsford", "priest"),
    Person("Seraphine Dell", 1584, "Greythorn", "physician"),
    Person("Ilsa Marrow", 1598, "Ashvale", "glassblower"),
    Person("Bastian Foy", 1619, "Tamsford", "fisherman"),
    Person("Taddeo Quince", 1630, "Ashvale", "harbour master"),
    Person("Hesper Quayle", 1655, "Mistral", "lighthouse keeper"),
    Person("Alaric Penn", 1662, "Lirren", "ferryman"),
    Person("Linnea Sorrow", 1702, "Mistral", "clockmaker"),
    Person("Emeric Dunlow", 1688, "Brisk", "engineer", ("Emeric the Loud",)),
    Person("Prudence Vell", 1715, "Pellum", "glassblower"),
    Person("Rufus Garran", 1721, "Kestrel Bay", "naturalist"),
    Person("Odile Farrant", 1734, "Ebbwick", "chemist"),
    Person("Casimir Wrenn", 1742, "Teller's Hythe", "astronomer"),
)

INVENTIONS = (
    Invention("tidewheel clock", "Linnea Sorrow", 1738, "keeping time by the tides", "brass"),
    Invention("saltglass lantern", "Prudence Vell", 1749, "lighting ships' decks in storms", "salt-hardened glass"),
    Invention("Dunlow fog horn", "Emeric Dunlow", 1719, "warning ships in fog", "bronze"),
    Invention("marsh pump", "Emeric Dunlow", 1726, "draining salt marshes", "oak and iron"),
    Invention("reed compass", "Rufus Garran", 1758, "finding north without a lodestone", "dried reed and wax"),
    Invention("resin varnish", "Odile Farrant", 1763, "sealing ship hulls", "pine resin"),
    Invention("star ledger", "Casimir Wrenn", 1771, "recording the positions of stars", "vellum"),
    Invention("kelp dye", "Odile Farrant", 1768, "dyeing wool a deep green", "seaweed"),
    Invention("glass float", "Ilsa Marrow", 1627, "keeping fishing nets afloat", "green glass"),
    Invention("tide table", "Wendeline Orr", 1601, "predicting high water", "printed paper"),
)

RIVERS = (
    River("Lisk", "Vashel", 38, "the Haller Fen", "the Grey Sound"),
    River("Marrel", "Vashel", 21, "Crane Hill", "the Grey Sound"),
    River("Tessan", "Quillmoor", 44, "Osk Tarn", "the Grey Sound"),
    River("Brannock", "Brannoch", 87, "the Hollow Pines", "the Amber Sea"),
    River("Vey", "Selvary", 29, "Mount Corra", "the Amber Sea"),
    River("Dunn", "Dunmarrow", 63, "the Basalt Steps", "the Northern Reach"),
    River("Orle", "Orrin Isle", 17, "the Drip Caves", "the Northern Reach"),
)

FESTIVALS = (
    Festival("Lantern Tide", "Pellum", "November", "the glassblowers of Selvary", 1751, the=False),
    Festival("Wool Fair of Ashvale", "Ashvale", "May", "the first shearing of the year", 1610),
    Festival("Night of Horns", "Brisk", "October", "Emeric Dunlow and his fog horn", 1725),
    Festival("Kestrel Feast", "Kestrel Bay", "April", "the return of the seabirds", 1680),
    Festival("Salt Sunday", "Tamsford", "August", "the salt harvest", 1599, the=False),
    Festival("Keel Day", "Greythorn", "March", "the launching of the first ship built on the isles", 1590, the=False),
)


def _by_name(items):
    return {item.name: item for item in items}


ISLAND, TOWN, PERSON, INVENTION, RIVER = map(_by_name, (ISLANDS, TOWNS, PEOPLE, INVENTIONS, RIVERS))


def _size(population: int) -> str:
    return "city" if population >= 30000 else "town" if population >= 5000 else "village"


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def documents() -> list[dict[str, str]]:
    docs = []
    for isl in ISLANDS:
        towns = [t.name for t in TOWNS if t.island == isl.name]
        rivers = [r.name for r in RIVERS if r.island == isl.name]
        docs.append(("island", isl.name, (
            f"{isl.name} is an island of {ARCHIPELAGO}, lying in {isl.sea}. It covers {isl.area_km2} "
            f"square kilometres and is known for its {isl.feature}. The {PERSON[isl.discovered_by].occupation} {isl.discovered_by} "
            f"was the first to chart it, in {isl.discovered_in}. Its capital is {isl.capital}; its other "
            f"settlements are {_join([t for t in towns if t != isl.capital])}. "
            f"The {'river' if len(rivers) == 1 else 'rivers'} {_join(rivers)} "
            f"{'drains' if len(rivers) == 1 else 'drain'} the island."
        )))
    for town in TOWNS:
        capital = ISLAND[town.island].capital == town.name
        docs.append(("town", town.name, (
            f"{town.name} is a {_size(town.population)} on {town.island}, one of {ARCHIPELAGO}"
            f"{', and the capital of the island' if capital else ''}. It was founded in {town.founded} by "
            f"{town.founder}. The river {town.river} flows through it. {town.name} is best known for "
            f"{town.known_for}, and had {town.population:,} inhabitants at the last census."
        )))
    for person in PEOPLE:
        founded = [t.name for t in TOWNS if t.founder == person.name]
        made = [i.name for i in INVENTIONS if i.inventor == person.name]
        charted = [i.name for i in ISLANDS if i.discovered_by == person.name]
        known_as = f", known to sailors as {_join(list(person.aliases))}," if person.aliases else ""
        text = f"{person.name} (born {person.born}){known_as} was a {person.occupation} born in {person.birthplace}."
        if charted:
            text += f" {person.name.split()[0]} was the first to chart {_join(charted)}."
        if founded:
            text += f" {person.name.split()[0]} founded {_join(founded)}."
        if made:
            text += f" {person.name.split()[0]} is remembered as the inventor of the {_join(made)}."
        docs.append(("person", person.name, text))
    for inv in INVENTIONS:
        docs.append(("invention", inv.name.capitalize() if inv.name[0].islower() else inv.name, (
            f"The {inv.name} is an invention for {inv.purpose}, made of {inv.material}. "
            f"It was invented by {inv.inventor} in {inv.year}, and copies of it spread across "
            f"{ARCHIPELAGO} within a generation."
        )))
    for river in RIVERS:
        towns = [t.name for t in TOWNS if t.river == river.name]
        docs.append(("river", river.name, (
            f"The {river.name} is a river of {river.island}, {river.length_km} kilometres long. "
            f"It rises at {river.source} and flows into {river.mouth}, passing {_join(towns)}."
        )))
    for fest in FESTIVALS:
        docs.append(("festival", fest.name, (
            f"{fest.called[0].upper() + fest.called[1:]} is a festival held every {fest.month} in {fest.town}. It honours "
            f"{fest.honours} and was first held in {fest.first_held}."
        )))
    return [{"id": f"almanac-{i:03d}", "title": title, "text": text, "kind": kind}
            for i, (kind, title, text) in enumerate(docs)]


def _person_answers(name: str) -> list[str]:
    return [name, *PERSON[name].aliases] if name in PERSON else [name]


def questions() -> list[dict]:
    qs: list[tuple[str, list[str], int]] = []

    def add(question: str, answers: list[str] | str, hops: int = 1) -> None:
        qs.append((question, [answers] if isinstance(answers, str) else answers, hops))

    for isl in ISLANDS:
        add(f"What is the capital of the island of {isl.name}?", isl.capital)
        add(f"How many square kilometres does the island of {isl.name} cover?",
            [str(isl.area_km2), f"{isl.area_km2} square kilometres", f"{isl.area_km2} km2"])
        add(f"In which year was {isl.name} first charted?", str(isl.discovered_in))
        add(f"Who founded the capital of {isl.name}?", _person_answers(TOWN[isl.capital].founder), 2)
    for town in TOWNS:
        add(f"In what year was {town.name} founded?", str(town.founded))
        add(f"Who founded {town.name}?", _person_answers(town.founder))
        add(f"On which island is {town.name}?", town.island)
        add(f"Which river flows through {town.name}?", [town.river, f"River {town.river}"])
        add(f"In which sea does the river that flows through {town.name} end?",
            RIVER[town.river].mouth, 2)
    for person in PEOPLE:
        add(f"What was the occupation of {person.name}?", person.occupation)
        add(f"In what year was {person.name} born?", str(person.born))
        if person.birthplace in TOWN:
            add(f"Where was {person.name} born?", person.birthplace)
            add(f"On which island was {person.name} born?", TOWN[person.birthplace].island, 2)
    for inv in INVENTIONS:
        add(f"Who invented the {inv.name}?", _person_answers(inv.inventor))
        add(f"In what year was the {inv.name} invented?", str(inv.year))
        add(f"What is the {inv.name} made of?", inv.material)
        inventor = PERSON[inv.inventor]
        add(f"In what year was the inventor of the {inv.name} born?", str(inventor.born), 2)
        if inventor.birthplace in TOWN:
            add(f"In which town was the inventor of the {inv.name} born?", inventor.birthplace, 2)
    for river in RIVERS:
        add(f"How long is the river {river.name}, in kilometres?",
            [str(river.length_km), f"{river.length_km} kilometres", f"{river.length_km} km"])
        add(f"Where does the river {river.name} rise?", river.source)
    for fest in FESTIVALS:
        add(f"In which month is {fest.called} held?", fest.month)
        add(f"In which town is {fest.called} held?", fest.town)
        add(f"Who founded the town where {fest.called} is held?",
            _person_answers(TOWN[fest.town].founder), 2)
    pairs = [("Tamsford", "Carrow End"), ("Greythorn", "Ashvale"), ("Pellum", "Kestrel Bay"),
             ("Brisk", "Mistral"), ("Hollin", "Ebbwick"), ("Fenholt", "Lirren")]
    for a, b in pairs:
        older = a if TOWN[a].founded < TOWN[b].founded else b
        add(f"Which was founded first, {a} or {b}?", older, 2)
    return [{"id": f"almanac-q{i:03d}", "question": q, "answers": answers, "hops": hops}
            for i, (q, answers, hops) in enumerate(qs)]


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def main() -> None:
    (HERE / "corpus.jsonl").write_text(render(documents()), encoding="utf-8")
    (HERE / "questions.jsonl").write_text(render(questions()), encoding="utf-8")
    print(f"Wrote {len(documents())} documents and {len(questions())} questions to {HERE}.")


if __name__ == "__main__":
    main()
