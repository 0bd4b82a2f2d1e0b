"""The documented examples and public names that the verifiers stage owns (tests/docs/stages.py)."""

from tests.docs.stages import documented_examples_test, public_names_test

test_documented_examples = documented_examples_test()
test_public_names = public_names_test()
