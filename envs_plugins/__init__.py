"""GEM's built-in environment packs. Each subpackage is a plugin registered through the ``gem``
entry-point group, exactly as a third-party pack is."""
