import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_count(self):
        with open(os.path.join(APP, "error_count.txt")) as f:
            self.assertEqual(f.read().strip(), "15")

    def test_log_untouched(self):
        self.assertTrue(os.path.exists(os.path.join(APP, "error_count.txt")))
        with open(os.path.join(APP, "server.log")) as f:
            self.assertEqual(len(f.readlines()), 36)


if __name__ == "__main__":
    unittest.main()
