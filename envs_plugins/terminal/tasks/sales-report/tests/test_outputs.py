import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def lines(self):
        with open(os.path.join(APP, "report.txt")) as f:
            return f.read().rstrip("\n").split("\n")

    def test_rows(self):
        self.assertEqual(self.lines()[:-1], [
            "pears            29.00", "apples           19.30", "kiwis            11.00", "plums             3.10"])

    def test_total(self):
        self.assertEqual(self.lines()[-1], "TOTAL            62.40")


if __name__ == "__main__":
    unittest.main()
