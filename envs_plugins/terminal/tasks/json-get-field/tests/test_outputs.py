import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_port(self):
        with open(os.path.join(APP, "port.txt")) as f:
            self.assertEqual(f.read().strip(), "5433")

    def test_enabled(self):
        with open(os.path.join(APP, "enabled.txt")) as f:
            self.assertEqual(f.read().split(), ["search", "export"])


if __name__ == "__main__":
    unittest.main()
