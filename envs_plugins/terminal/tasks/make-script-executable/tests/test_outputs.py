import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_executable(self):
        self.assertTrue(os.stat(os.path.join(APP, "run.sh")).st_mode & 0o100)

    def test_output(self):
        with open(os.path.join(APP, "output.txt")) as f:
            self.assertEqual(f.read(), "hello from run.sh\n")


if __name__ == "__main__":
    unittest.main()
