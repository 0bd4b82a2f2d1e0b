import os
import unittest

APP = "/app"


import json


class TestTask(unittest.TestCase):
    def load(self):
        with open(os.path.join(APP, "final.json")) as f:
            return json.load(f)

    def test_nested_merge(self):
        self.assertEqual(self.load()["server"], {"host": "0.0.0.0", "port": 9090, "tls": {"enabled": True, "cert": "/etc/c.pem"}})

    def test_lists_replaced_and_nulls_removed(self):
        final = self.load()
        self.assertEqual(final["plugins"], ["auth"])
        self.assertNotIn("debug", final)

    def test_order(self):
        self.assertEqual(self.load()["log_level"], "warn")


if __name__ == "__main__":
    unittest.main()
