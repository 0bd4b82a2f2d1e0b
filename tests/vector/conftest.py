import pytest

from tests.vector.envs import RELEASE


@pytest.fixture(scope="session", autouse=True)
def release_hung_calls():
    """Let the environment calls that tests leave hanging return at the end of the session."""
    yield
    RELEASE.set()
