import os
import unittest

APP = "/app"


EXPECTED = [
    "2024-07-01T09:59:59Z db start",
    "2024-07-01T10:00:05Z web GET /a",
    "2024-07-01T10:01:00Z db slow query",
    "2024-07-01T10:02:00Z web GET /b",
    "2024-07-01T10:02:00Z db checkpoint",
    "2024-07-01T10:02:00Z jobs job=42 done",
    "2024-07-01T11:00:00Z jobs job=43 failed",
    "2024-07-01T11:30:00Z web POST /c",
]


class TestTask(unittest.TestCase):
    def lines(self):
        with open(os.path.join(APP, "merged.log")) as f:
            return f.read().splitlines()

    def test_all_lines_present(self):
        self.assertEqual(sorted(self.lines()), sorted(EXPECTED))

    def test_order(self):
        self.assertEqual(self.lines(), EXPECTED)


if __name__ == "__main__":
    unittest.main()
