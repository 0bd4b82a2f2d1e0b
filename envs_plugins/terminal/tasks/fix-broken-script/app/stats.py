import sys


def main(path):
    with open(path) as f:
        values = [float(line) for line in f]
    n = len(values)
    mean = sum(values) / n
    median = values[n // 2]
    print(f"mean={mean:.2f} median={median:.2f}")


main(sys.argv[1])
