import os
import unittest

APP = "/app"


EXPECTED = {"pdf": ["report.PDF", "taxes.pdf"], "txt": ["notes.txt"], "jpg": ["cat.jpg", "dog.JPG"],
            "gz": ["backup.tar.gz"], "other": ["Makefile", "README"]}


class TestTask(unittest.TestCase):
    def test_sorted(self):
        found = {d: sorted(os.listdir(os.path.join(APP, "sorted", d)))
                 for d in os.listdir(os.path.join(APP, "sorted"))}
        self.assertEqual(found, EXPECTED)

    def test_inbox_empty(self):
        self.assertTrue(os.path.isdir(os.path.join(APP, "sorted")))
        self.assertEqual(os.listdir(os.path.join(APP, "inbox")), [])

    def test_content_kept(self):
        with open(os.path.join(APP, "sorted", "txt", "notes.txt")) as f:
            self.assertEqual(f.read(), "remember the milk\n")


if __name__ == "__main__":
    unittest.main()
