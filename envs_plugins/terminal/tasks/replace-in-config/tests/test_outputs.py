import os
import unittest

APP = "/app"


def read(path):
    with open(os.path.join(APP, "config", path)) as f:
        return f.read()


class TestTask(unittest.TestCase):
    def test_conf_files_changed(self):
        self.assertEqual(read("app.conf"), "host = new.example.com\nbackup = new.example.com:8080\n")
        self.assertEqual(read("nested/db.conf"), "url=postgres://new.example.com/db\n")

    def test_other_files_unchanged(self):
        self.assertIn("new.example.com", read("app.conf"))
        self.assertEqual(read("notes.txt"), "we moved from old.example.com\n")
        self.assertEqual(read("nested/db.conf.bak"), "url=postgres://old.example.com/db\n")


if __name__ == "__main__":
    unittest.main()
