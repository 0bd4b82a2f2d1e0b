"""Registers the ``webshop`` pack: the reference's ``webshop:{train,test}-{text,text_rich,html}``
ids on upstream WebShop's data (a path the user gives), and ``webshop:sample-*`` on the sample
GEM ships (see docs/envs.md)."""

import os

from gem_core import hookimpl

_ENV = "gem_envs.webshop.env:WebShopEnv"
_REQUIRES = {"bm25s": "tools", "rapidfuzz": "envs"}
_RULES = dict(max_turns=15, error_tolerance=15, format_error_reward=-0.1)  # the reference's settings
SAMPLE_DIR = os.path.join(os.path.dirname(os.path.realpath(__file__)), "sample")


@hookimpl
def gem_register_envs(register):
    for mode in ("text", "text_rich", "html"):
        for split in ("train", "test"):
            register(f"webshop:{split}-{mode}", _ENV, observation_mode=mode, split=split, offline=False,
                     requires=_REQUIRES, **_RULES,
                     description=f"Find and buy the product an instruction describes ({split} goals, {mode} pages). "
                                 "Needs upstream WebShop's files (data_dir= or $GEM_WEBSHOP_DATA) and the envs and tools extras.")
            # the spellings the reference's README and tests use, though it never registered them
            names = [f"webshop:Webshop-{split}-{mode}"] + ([f"webshop:Webshop-{split}"] if mode == "text" else [])
            for name in names:
                register(name, _ENV, observation_mode=mode, split=split, offline=False, requires=_REQUIRES, **_RULES,
                         description=f"The reference's spelling of webshop:{split}-{mode}.")
        register(f"webshop:sample-{mode}", _ENV, observation_mode=mode, split="all", data_dir=SAMPLE_DIR,
                 requires=_REQUIRES, **_RULES,
                 description=f"WebShop on the small catalogue GEM ships ({mode} pages, offline; extras envs and tools).")


@hookimpl
def gem_register_keys(register):
    register("webshop-goals", "gem_envs.webshop:sample/items_human_ins_sample.json",
             description="The sample store's instructions with the products and options that satisfy them.")
