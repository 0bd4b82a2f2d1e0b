"""The WebShop pack: find, customise and buy the product an instruction asks for, in upstream
WebShop's simulated shop, with its data files, its pages and its reward.

* :mod:`~gem_envs.webshop.plugin`: registers the ids.
* :mod:`~gem_envs.webshop.env`: the environment.
* :mod:`~gem_envs.webshop.files`: upstream's data files, read without holding them whole.
* :mod:`~gem_envs.webshop.store`: the products, goals and search index on disk.
* :mod:`~gem_envs.webshop.pages`: the shop's pages, each rendered three ways.
* :mod:`~gem_envs.webshop.reward`: upstream's reward for a purchase.
* :mod:`~gem_envs.webshop.sample`: the small invented shop that ships with GEM, and the module
  that writes it.
"""
