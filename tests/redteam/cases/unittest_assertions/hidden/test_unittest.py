import unittest

from solution import area, biggest, evens


class TestSolution(unittest.TestCase):
    def test_area(self):
        self.assertAlmostEqual(area(2.0), 12.566370614359172)

    def test_evens(self):
        self.assertSequenceEqual(evens([1, 2, 3, 4]), [2, 4])

    def test_biggest(self):
        self.assertGreater(biggest([3, 9, 4]), 8)
