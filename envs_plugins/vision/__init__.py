"""The ``vision`` pack: visual tasks generated offline and drawn with Pillow (``vision:*``).

Each observation carries its image as :mod:`gem_core.images` describes: an ``<image>``
placeholder in the text and the PIL image in ``info["images"]``.
"""
