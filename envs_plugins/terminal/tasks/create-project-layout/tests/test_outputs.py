import os
import unittest

APP = "/app"


import subprocess


class TestTask(unittest.TestCase):
    def test_directories(self):
        for name in ("src", "tests", "docs"):
            self.assertTrue(os.path.isdir(os.path.join(APP, "project", name)), name)

    def test_readme(self):
        with open(os.path.join(APP, "project", "README.md")) as f:
            self.assertEqual(f.readline().rstrip("\n"), "# Project")

    def test_main_runs(self):
        out = subprocess.run(["python3", os.path.join(APP, "project", "src", "main.py")],
                             capture_output=True, text=True)
        self.assertEqual(out.stdout, "hello\n")


if __name__ == "__main__":
    unittest.main()
