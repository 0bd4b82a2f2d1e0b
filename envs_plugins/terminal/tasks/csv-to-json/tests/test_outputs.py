import os
import unittest

APP = "/app"


import json


class TestTask(unittest.TestCase):
    def load(self):
        with open(os.path.join(APP, "people.json")) as f:
            return json.load(f)

    def test_rows(self):
        rows = self.load()
        self.assertEqual(len(rows), 3)
        self.assertEqual(rows[0], {"name": "Ada Lovelace", "age": 36, "city": "London"})

    def test_quoted_field(self):
        self.assertEqual(self.load()[1]["city"], "Paris, France")

    def test_age_is_number(self):
        self.assertTrue(all(isinstance(row["age"], int) for row in self.load()))


if __name__ == "__main__":
    unittest.main()
