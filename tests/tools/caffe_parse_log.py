#!/usr/bin/env python3
"""Caffe's tools/extra/parse_log.py, as its documented behaviour describes it, rewritten here.

Usage: caffe_parse_log.py LOG OUTPUT_DIR

Writes OUTPUT_DIR/<log name>.train and .test: CSV tables with NumIters, Seconds, LearningRate
and one column per net output, as Caffe's parser does. Its assumptions about a log are the
ones that matter for compatibility:
- the time stamp is glog's default prefix without a year, "I1124 16:06:39.123456": the month
  is characters 1-2 of the first word and the day characters 3-4; the year is the log file's
  creation year, and a month going backwards means the next year;
- the start time is that of the first line containing "Solving";
- "Iteration N" anywhere on a line sets the current iteration; nothing is read before the
  first one; lines whose time stamp does not parse are skipped;
- "lr = X" sets the learning rate; "Train net output #K: NAME = X" and "Test net output #K:
  NAME = X" fill the row of the current iteration; a row is complete when it has as many
  columns as the first row.
A prefix with the year ("I20261124 ...") makes month 20: the start time fails to parse and the
parser stops with "month must be in 1..12", as Caffe's does.
"""

import csv
import datetime
import os
import re
import sys

ITERATION = re.compile(r"Iteration (\d+)")
TRAIN_OUTPUT = re.compile(r"Train net output #(\d+): (\S+) = ([\.\deE+-]+)")
TEST_OUTPUT = re.compile(r"Test net output #(\d+): (\S+) = ([\.\deE+-]+)")
LEARNING_RATE = re.compile(r"lr = ([-+]?[0-9]*\.?[0-9]+([eE]?[-+]?[0-9]+)?)")


def line_time(line, year):
    words = line.strip().split()
    month, day = int(words[0][1:3]), int(words[0][3:5])
    clock, fraction = words[1].rsplit(".", 1)
    hour, minute, second = (int(part) for part in clock.split(":"))
    return datetime.datetime(year, month, day, hour, minute, second, int(fraction))


def start_time(lines, year):
    for line in lines:
        if "Solving" in line:
            return line_time(line, year)
    raise ValueError("no 'Solving' line: not a training log")


class Table:
    def __init__(self):
        self.rows = []
        self.row = None

    def add(self, match, iteration, seconds, learning_rate):
        if match:
            if self.row is None or self.row["NumIters"] != iteration:
                if self.row is not None:
                    self.rows.append(self.row)
                self.row = {"NumIters": iteration, "Seconds": seconds, "LearningRate": learning_rate}
            self.row[match.group(2)] = float(match.group(3))
        if self.row is not None and self.rows and len(self.row) == len(self.rows[0]):
            self.rows.append(self.row)
            self.row = None

    def finish(self):
        if self.row is not None:
            self.rows.append(self.row)
            self.row = None
        return self.rows


def parse(path):
    with open(path) as log:
        lines = log.readlines()
    year = datetime.datetime.fromtimestamp(os.path.getctime(path)).year
    start = start_time(lines, year)
    last = start
    iteration, learning_rate = -1, float("nan")
    train, test = Table(), Table()
    for line in lines:
        match = ITERATION.search(line)
        if match:
            iteration = float(match.group(1))
        if iteration == -1:
            continue
        try:
            moment = line_time(line, year)
        except (ValueError, IndexError):
            continue
        if moment.month < last.month:
            year += 1
            moment = line_time(line, year)
        last = moment
        seconds = (moment - start).total_seconds()
        match = LEARNING_RATE.search(line)
        if match:
            learning_rate = float(match.group(1))
        train.add(TRAIN_OUTPUT.search(line), iteration, seconds, learning_rate)
        test.add(TEST_OUTPUT.search(line), iteration, seconds, learning_rate)
    return train.finish(), test.finish()


def write_csv(path, rows):
    with open(path, "w", newline="") as out:
        if not rows:
            return
        writer = csv.DictWriter(out, fieldnames=list(rows[0].keys()), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    log, output_dir = sys.argv[1], sys.argv[2]
    train, test = parse(log)
    name = os.path.basename(log)
    write_csv(os.path.join(output_dir, name + ".train"), train)
    write_csv(os.path.join(output_dir, name + ".test"), test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
