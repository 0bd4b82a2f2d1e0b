"""The ``vision`` pack: visual tasks generated offline and drawn with Pillow (``vision:*``).

Each observation carries its image as :mod:`gem_core.images` describes: an ``<image>``
placeholder in the text and the PIL image in ``info["images"]``.

* :mod:`~gem_envs.vision.plugin`: registers the ids.
* :mod:`~gem_envs.vision.env`: single-turn tasks whose answer is a number, graded by
  :mod:`~gem_envs.vision.answers`, drawn with :mod:`~gem_envs.vision.draw`.
* :mod:`~gem_envs.vision.grids`: reasoning-gym grid tasks drawn as images.
* :mod:`~gem_envs.vision.boards`: language games played from a picture of their board.
* :mod:`~gem_envs.vision.geometry3k`: Geometry3K, graded by the math grader.
"""
