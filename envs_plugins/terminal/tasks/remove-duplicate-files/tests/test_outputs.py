import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_remaining(self):
        self.assertEqual(sorted(os.listdir(os.path.join(APP, "photos"))), ["a.jpg", "b.jpg", "d.jpg", "e.jpg"])

    def test_kept_content(self):
        self.assertFalse(os.path.exists(os.path.join(APP, "photos", "c.jpg")))
        with open(os.path.join(APP, "photos", "a.jpg")) as f:
            self.assertEqual(f.read(), "sunset\n")


if __name__ == "__main__":
    unittest.main()
