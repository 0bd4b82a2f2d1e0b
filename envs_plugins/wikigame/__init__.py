"""The WikiGame pack: navigate Wikipedia from a start article to a target by following links,
read from a Kiwix ZIM file (libzim, no server) or a MediaWiki API.

* :mod:`~gem_envs.wikigame.plugin`: registers the ids.
* :mod:`~gem_envs.wikigame.env`: the game.
* :mod:`~gem_envs.wikigame.pages`: what the game reads of an article, and the backends' interface:
  :mod:`~gem_envs.wikigame.zim` (a ZIM file) and :mod:`~gem_envs.wikigame.mediawiki` (an API).
"""
