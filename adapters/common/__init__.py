"""What every training-library adapter does alike, written once.

* :mod:`~gem_adapters.common.options`: the episode options (wrappers, turn and token limits).
* :mod:`~gem_adapters.common.settings`: the settings every ``gem <library> config`` shares.
* :mod:`~gem_adapters.common.dataset`: the (environment id, seed) rows a library's dataloader reads.
* :mod:`~gem_adapters.common.written`: the datasets plus a library's GEM file, the launch command,
  and the YAML writer of config files.
* :mod:`~gem_adapters.common.cli`: the shared command-line options and what a config command prints.
* :mod:`~gem_adapters.common.launch`: launch commands as one shell line, and GEM's entry modules
  in front of a library's launcher.
* :mod:`~gem_adapters.common.session`: one GEM episode driven by text, for libraries that generate.
* :mod:`~gem_adapters.common.chat`: the text between turns, from a tokenizer's chat template.
* :mod:`~gem_adapters.common.turns`: where turns and their rewards sit in a token row.
* :mod:`~gem_adapters.common.estimators`: GEM's estimators on token rows, named as libraries see them.
* :mod:`~gem_adapters.common.patch`: GEM's function in place of a library's, and the library's back.

Nothing here imports a training library; torch is imported only by the token-level helpers.
"""
