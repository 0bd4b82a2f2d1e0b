import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_extracted(self):
        with open(os.path.join(APP, "extracted", "docs", "guide.md")) as f:
            self.assertEqual(f.read(), "# Guide\n")
        self.assertTrue(os.path.isfile(os.path.join(APP, "extracted", "bin", "tool.sh")))

    def test_count(self):
        with open(os.path.join(APP, "count.txt")) as f:
            self.assertEqual(f.read().strip(), "4")


if __name__ == "__main__":
    unittest.main()
