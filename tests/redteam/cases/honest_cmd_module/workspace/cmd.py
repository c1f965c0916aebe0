"""The calculator's command line: python -m cmd 6 7."""

import sys

from calc import mul


def main(argv):
    a, b = (int(x) for x in argv)
    print(mul(a, b))


if __name__ == "__main__":
    main(sys.argv[1:])
