import os
import unittest

APP = "/app"


import subprocess


def run(expression):
    out = subprocess.run(["python3", os.path.join(APP, "rpn.py"), expression], capture_output=True, text=True,
                         timeout=10)
    return out.returncode, out.stdout.strip(), out.stderr


class TestTask(unittest.TestCase):
    def test_basic(self):
        self.assertEqual(run("3 4 + 2 *")[:2], (0, "14"))

    def test_division_and_format(self):
        self.assertEqual([run("2 4 /")[1], run("6 3 /")[1], run("1.5 2.25 +")[1]], ["0.5", "2", "3.75"])

    def test_negative_numbers(self):
        self.assertEqual(run("-2 3 *")[1], "-6")

    def test_dup_swap(self):
        self.assertEqual([run("5 dup *")[1], run("1 2 swap -")[1]], ["25", "1"])

    def test_errors(self):
        for expression in ("1 +", "1 0 /", "1 2", "2 x +"):
            code, _, err = run(expression)
            self.assertEqual(code, 1, expression)
            self.assertTrue(err.startswith("error:"), expression)


if __name__ == "__main__":
    unittest.main()
