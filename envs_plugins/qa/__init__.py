"""The ``qa`` pack: answer questions, optionally searching a corpus first."""
