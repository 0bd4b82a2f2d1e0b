import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_corrupt(self):
        with open(os.path.join(APP, "corrupt.txt")) as f:
            self.assertEqual(f.read().split(), ["files/beta.txt", "files/notes/eps.txt"])


if __name__ == "__main__":
    unittest.main()
