import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_total(self):
        with open(os.path.join(APP, "total.txt")) as f:
            self.assertEqual(f.read().strip(), "1603.42")


if __name__ == "__main__":
    unittest.main()
