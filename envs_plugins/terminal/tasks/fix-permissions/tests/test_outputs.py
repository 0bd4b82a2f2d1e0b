import os
import unittest

APP = "/app"


def mode(path):
    return oct(os.stat(os.path.join(APP, "site", path)).st_mode & 0o777)


class TestTask(unittest.TestCase):
    def test_secret(self):
        self.assertEqual(mode("secret.key"), "0o600")

    def test_scripts(self):
        self.assertEqual([mode("bin/start.sh"), mode("bin/stop.sh")], ["0o755", "0o755"])

    def test_public(self):
        self.assertEqual([mode("public"), mode("public/css"), mode("public/index.html"), mode("public/css/site.css")],
                         ["0o755", "0o755", "0o644", "0o644"])


if __name__ == "__main__":
    unittest.main()
