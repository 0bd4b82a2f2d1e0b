import os
import unittest

APP = "/app"


import tarfile


class TestTask(unittest.TestCase):
    def test_members(self):
        with tarfile.open(os.path.join(APP, "backup.tar.gz"), "r:gz") as tar:
            names = sorted(m.name.lstrip("./") for m in tar.getmembers() if m.isfile())
        self.assertEqual(names, ["docs/guide/intro.md", "docs/guide/setup/install.md", "docs/index.md"])

    def test_content(self):
        with tarfile.open(os.path.join(APP, "backup.tar.gz"), "r:gz") as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("install.md"))
            self.assertEqual(tar.extractfile(member).read(), b"run make install\n")


if __name__ == "__main__":
    unittest.main()
