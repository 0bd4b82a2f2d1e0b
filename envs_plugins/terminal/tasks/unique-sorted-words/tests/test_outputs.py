import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_unique(self):
        with open(os.path.join(APP, "unique.txt")) as f:
            self.assertEqual(f.read().split("\n"), ["barks", "brown", "dog", "fox", "jumps", "lazy", "over",
                                                   "quick", "the", ""])


if __name__ == "__main__":
    unittest.main()
