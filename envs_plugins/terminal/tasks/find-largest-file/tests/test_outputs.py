import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_largest(self):
        with open(os.path.join(APP, "largest.txt")) as f:
            self.assertEqual(f.read().strip(), "logs/old/archive.bin")


if __name__ == "__main__":
    unittest.main()
