"""The core stage's share of the documented examples (README.md and docs/; those OpenEnv's
environment owns run there) and of the public names (tests/docs/stages.py)."""

from tests.docs.examples import CORE
from tests.docs.stages import RUN_FROM_CORE, documented_examples_test, public_names_test

test_documented_examples = documented_examples_test(RUN_FROM_CORE)
test_public_names = public_names_test(CORE)
