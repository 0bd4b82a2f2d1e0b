import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_csv(self):
        with open(os.path.join(APP, "errors_per_hour.csv")) as f:
            self.assertEqual(f.read().strip().splitlines(), ['hour,errors', '08,4', '09,4', '10,4', '11,4', '12,4'])


if __name__ == "__main__":
    unittest.main()
