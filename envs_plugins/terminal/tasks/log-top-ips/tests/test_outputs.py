import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_top_ips(self):
        with open(os.path.join(APP, "top_ips.txt")) as f:
            lines = [line.split() for line in f.read().strip().splitlines()]
        self.assertEqual(lines, [["9", "10.0.0.5"], ["7", "192.168.1.20"], ["5", "172.16.0.3"]])

    def test_not_found(self):
        with open(os.path.join(APP, "not_found.txt")) as f:
            self.assertEqual(f.read().strip(), "5")


if __name__ == "__main__":
    unittest.main()
