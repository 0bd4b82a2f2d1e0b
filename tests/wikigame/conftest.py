import pytest

from tests.wikigame.wiki import MediaWikiStub, build_zim


@pytest.fixture(scope="session")
def zim_file(tmp_path_factory):
    return build_zim(tmp_path_factory.mktemp("zim") / "testwiki.zim")


@pytest.fixture
def mediawiki():
    stub = MediaWikiStub()
    yield stub
    stub.close()
