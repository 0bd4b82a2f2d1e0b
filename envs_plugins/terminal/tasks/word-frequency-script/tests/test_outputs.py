import os
import unittest

APP = "/app"


import subprocess


def run(text, *args):
    return subprocess.run([os.path.join(APP, "wordfreq.sh"), *args], input=text, capture_output=True,
                          text=True, timeout=10).stdout


class TestTask(unittest.TestCase):
    def test_default_three(self):
        self.assertEqual(run("b a c a B, b! d. a"), "3 a\n3 b\n1 c\n")

    def test_argument(self):
        self.assertEqual(run("Dog cat DOG bird-dog cat\nfish", "2"), "3 dog\n2 cat\n")


if __name__ == "__main__":
    unittest.main()
