import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_totals(self):
        with open(os.path.join(APP, "totals.csv")) as f:
            self.assertEqual(f.read().split(), ["bob,60.00", "ann,55.50", "dee,55.00", "cid,20.00"])

    def test_best(self):
        with open(os.path.join(APP, "best.txt")) as f:
            self.assertEqual(f.read().strip(), "bob")


if __name__ == "__main__":
    unittest.main()
