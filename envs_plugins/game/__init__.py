"""The ``game`` pack: multi-turn language games."""
