import os
import unittest

APP = "/app"


import subprocess
import tempfile


def run(numbers):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(numbers)
    out = subprocess.run(["python3", os.path.join(APP, "stats.py"), f.name], capture_output=True, text=True)
    return out.stdout.strip()


class TestTask(unittest.TestCase):
    def test_odd_count(self):
        self.assertEqual(run("5\n1\n3\n"), "mean=3.00 median=3.00")

    def test_even_count(self):
        self.assertEqual(run("4\n1\n3\n10\n"), "mean=4.50 median=3.50")

    def test_blank_lines_and_decimals(self):
        self.assertEqual(run("2.5\n\n0.5\n"), "mean=1.50 median=1.50")


if __name__ == "__main__":
    unittest.main()
