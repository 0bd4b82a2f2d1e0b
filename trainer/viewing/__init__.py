"""``gem view``: :mod:`~gem_trainer.viewing.page` writes one static page of a run's episodes
(the template ``page.html`` with the run's data embedded)."""
