"""Writes the WebShop sample GEM ships, in upstream WebShop's file formats: a small invented
catalogue (``items_shuffle_sample.json``), its attributes and synthetic instructions
(``items_ins_v2_sample.json``) and human-style instructions (``items_human_ins_sample.json``).
The products and instructions are written for GEM; none is taken from upstream's data.

Run ``python -m gem_envs.webshop.sample.build`` after editing the catalogue below.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

# category, query, product category path, then per product: name, price, attributes, options
# (name -> values), bullet points, and human instructions as (text, attributes, options).
CATALOGUE = [
    ("beauty", "deodorant", "Beauty & Personal Care › Personal Care › Deodorants & Antiperspirants › Deodorants", [
        ("Citrus Breeze Natural Deodorant Stick, Aluminum Free", "$9.99", ["aluminum free", "natural ingredients", "long lasting"],
         {"scent": ["Citrus", "Lavender", "Unscented"], "size": ["2.6 Ounce", "2.6 Ounce (Pack of 2)"]},
         ["Aluminum free formula that keeps you fresh all day", "Made with natural ingredients"],
         [("i need a long lasting natural deodorant without aluminum, lavender scent", ["aluminum free", "long lasting"], ["lavender"]),
          ("looking for an unscented aluminum free deodorant in a pack of 2", ["aluminum free"], ["unscented", "2.6 ounce (pack of 2)"])]),
        ("Sport Antiperspirant Deodorant Spray for Men, 48 Hour Protection", "$6.49", ["long lasting", "quick drying"],
         {"scent": ["Fresh", "Cool Ocean"]},
         ["48 hour sweat and odor protection", "Quick drying spray"],
         [("i want a quick drying antiperspirant spray for men with cool ocean scent", ["quick drying"], ["cool ocean"])]),
        ("Sensitive Skin Deodorant Cream, Baking Soda Free", "$12.00", ["sensitive skin", "baking soda free", "cruelty free"],
         {"size": ["1 Ounce", "2 Ounce"]},
         ["Gentle cream for sensitive skin", "Cruelty free and vegan"],
         [("i am looking for a cruelty free deodorant cream for sensitive skin, 2 ounce", ["cruelty free", "sensitive skin"], ["2 ounce"])]),
    ]),
    ("beauty", "shampoo", "Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Shampoos", [
        ("Argan Oil Moisturizing Shampoo for Dry Damaged Hair", "$14.95", ["dry hair", "sulfate free", "argan oil"],
         {"size": ["10 Fl Oz", "16 Fl Oz", "32 Fl Oz"]},
         ["Sulfate free formula with argan oil", "Repairs dry and damaged hair"],
         [("i need a sulfate free shampoo for dry hair, 16 fl oz", ["sulfate free", "dry hair"], ["16 fl oz"])]),
        ("Tea Tree Anti Dandruff Shampoo", "$11.25", ["dandruff", "tea tree", "paraben free"],
         {"size": ["8 Fl Oz", "16 Fl Oz"]},
         ["Tea tree oil soothes an itchy scalp", "Paraben free"],
         [("i want a paraben free tea tree shampoo for dandruff", ["paraben free", "dandruff"], ["8 fl oz"])]),
        ("Kids Tear Free Shampoo and Body Wash", "$7.80", ["tear free", "hypoallergenic"],
         {"scent": ["Berry", "Coconut"]},
         ["Tear free and gentle for kids", "Hypoallergenic and pediatrician tested"],
         [("find me a hypoallergenic tear free kids shampoo with coconut scent", ["tear free", "hypoallergenic"], ["coconut"])]),
    ]),
    ("fashion", "men's t shirt", "Clothing, Shoes & Jewelry › Men › Clothing › Shirts › T-Shirts", [
        ("Men's Classic Fit Crew Neck Cotton T-Shirt", "$15.99 - $19.99", ["machine wash", "cotton", "classic fit"],
         {"color": ["Black", "Navy Blue", "Heather Grey", "White"], "size": ["Small", "Medium", "Large", "X-Large"]},
         ["100% cotton, machine wash", "Classic fit crew neck"],
         [("i need a men's classic fit cotton t-shirt in navy blue, size large", ["classic fit", "cotton"], ["navy blue", "large"]),
          ("i want a machine wash crew neck shirt for men, heather grey, medium", ["machine wash"], ["heather grey", "medium"])]),
        ("Men's Moisture Wicking Athletic Short Sleeve Shirt", "$12.99", ["moisture wicking", "quick drying", "polyester"],
         {"color": ["Red", "Black", "Royal Blue"], "size": ["Medium", "Large", "XX-Large"]},
         ["Moisture wicking polyester", "Quick drying for workouts"],
         [("looking for a moisture wicking athletic shirt for men, red, xx-large", ["moisture wicking"], ["red", "xx-large"])]),
        ("Men's Slim Fit V-Neck T-Shirt 3 Pack", "$24.50", ["slim fit", "cotton blend"],
         {"color": ["Black | White | Grey", "Navy | Olive | Burgundy"], "size": ["Small", "Medium", "Large"]},
         ["Pack of three slim fit v-neck shirts", "Soft cotton blend"],
         [("i want a 3 pack of slim fit v-neck t-shirts in navy olive burgundy, small", ["slim fit"], ["navy | olive | burgundy", "small"])]),
    ]),
    ("fashion", "women's running shoes", "Clothing, Shoes & Jewelry › Women › Shoes › Athletic › Running", [
        ("Women's Lightweight Breathable Mesh Running Shoes", "$39.99", ["lightweight", "breathable", "rubber sole"],
         {"color": ["Pink", "Black", "White"], "size": ["6", "7", "8", "9"]},
         ["Breathable mesh upper", "Non slip rubber sole"],
         [("i need lightweight breathable running shoes for women, pink, size 7", ["lightweight", "breathable"], ["pink", "7"])]),
        ("Women's Trail Running Shoe, Waterproof", "$64.00", ["waterproof", "rubber sole", "arch support"],
         {"color": ["Grey", "Olive"], "size": ["7", "8", "9", "10"]},
         ["Waterproof membrane", "Arch support for long runs"],
         [("looking for waterproof trail running shoes with arch support, olive, size 9", ["waterproof", "arch support"], ["olive", "9"])]),
        ("Women's Memory Foam Walking Sneakers", "$29.99", ["memory foam", "slip on"],
         {"color": ["Navy", "Beige"], "size": ["6", "7", "8"]},
         ["Memory foam insole", "Easy slip on design"],
         [("i want memory foam slip on sneakers for women in beige, size 6", ["memory foam", "slip on"], ["beige", "6"])]),
    ]),
    ("grocery", "green tea", "Grocery & Gourmet Food › Beverages › Tea › Green", [
        ("Organic Japanese Matcha Green Tea Powder", "$21.99", ["organic", "gluten free", "non gmo"],
         {"size": ["1 Ounce", "3.5 Ounce"]},
         ["USDA organic ceremonial matcha", "Non GMO and gluten free"],
         [("i want organic matcha green tea powder, non gmo, 3.5 ounce", ["organic", "non gmo"], ["3.5 ounce"])]),
        ("Jasmine Green Tea Bags, 100 Count", "$8.49", ["caffeine", "individually wrapped"],
         {"flavor name": ["Jasmine", "Mint Jasmine"]},
         ["100 individually wrapped tea bags", "Natural caffeine"],
         [("find individually wrapped jasmine green tea bags", ["individually wrapped"], ["jasmine"])]),
        ("Decaf Green Tea with Lemon, Sugar Free", "$6.99", ["decaffeinated", "sugar free", "low calorie"],
         {"size": ["20 Count", "40 Count"]},
         ["Decaffeinated green tea with lemon", "Sugar free and low calorie"],
         [("i need a sugar free decaf green tea with lemon, 40 count", ["sugar free", "decaffeinated"], ["40 count"])]),
    ]),
    ("garden", "led desk lamp", "Tools & Home Improvement › Lighting & Ceiling Fans › Lamps & Shades › Desk Lamps", [
        ("LED Desk Lamp with USB Charging Port, Dimmable", "$27.99", ["dimmable", "usb port", "eye caring"],
         {"color": ["Black", "White", "Silver"]},
         ["Five brightness levels, dimmable", "USB charging port on the base"],
         [("i want a dimmable led desk lamp with a usb port, silver", ["dimmable", "usb port"], ["silver"])]),
        ("Clamp On LED Reading Light, Flexible Gooseneck", "$15.49", ["flexible gooseneck", "energy saving"],
         {"color": ["Black", "White"]},
         ["Clamps to desks and headboards", "Energy saving LED"],
         [("looking for a clamp on reading light with a flexible gooseneck in white", ["flexible gooseneck"], ["white"])]),
        ("Wireless Charger Desk Lamp, Touch Control", "$45.00", ["wireless charging", "touch control", "dimmable"],
         {"color": ["Walnut", "Black"]},
         ["Qi wireless charging pad in the base", "Touch control dimmable light"],
         [("i need a touch control desk lamp with wireless charging, walnut color", ["wireless charging", "touch control"], ["walnut"])]),
    ]),
]


def build() -> None:
    products, attributes, human = [], {}, {}
    number = 0
    for category, query, path, entries in CATALOGUE:
        for name, price, attrs, options, bullets, instructions in entries:
            number += 1
            asin = f"B0GEM{number:05d}"
            products.append({
                "asin": asin, "category": category, "query": query, "name": name, "product_category": path,
                "full_description": f"{name}. " + " ".join(b + "." for b in bullets), "pricing": price,
                "images": [f"https://example.invalid/{asin}.jpg"], "small_description": bullets,
                "customization_options": {k: [{"value": v, "image": None} for v in vs] for k, vs in options.items()},
                "average_rating": "N.A.",
            })
            first = instructions[0]
            attributes[asin] = {"attributes": attrs, "instruction": first[0].split(",")[0],
                                "instruction_attributes": first[1]}
            human[asin] = [{"asin": asin, "instruction": text, "instruction_attributes": ia, "instruction_options": io}
                           for text, ia, io in instructions]
    for name, data in (("items_shuffle_sample.json", products), ("items_ins_v2_sample.json", attributes),
                       ("items_human_ins_sample.json", human)):
        (HERE / name).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    build()
