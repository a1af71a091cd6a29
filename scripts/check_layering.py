#!/usr/bin/env python3
"""Fails when a source or header includes a part of Doppio above its own (docs/layering.md).

    scripts/check_layering.py        # from anywhere; exit 1 naming each upward include

The parts by folder, lowest first: util (base), device, core, data, layers, solvers,
parallel. A file may include its own part and any part below it; tools/, python/, tests/
and bench/ may include all. The build enforces the same order (each part's include path holds only the
parts below it, cmake/Parts.cmake); this check runs first in scripts/test.sh because it
takes a second and names every offending line at once, where the build stops at the first
file that fails to compile, half an hour in.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Lowest first. data sits below layers: data layers read through data/, not the reverse.
ORDER = ["util", "device", "core", "data", "layers", "solvers", "parallel"]
RANK = {part: i for i, part in enumerate(ORDER)}

INCLUDE = re.compile(r'\s*#\s*include\s+"doppio/(\w+)/')


def part_of(path):
    parts = path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["include", "doppio"] and len(parts) > 3:
        return parts[2]
    return None


def main():
    errors = []
    for top in ("src", "include/doppio"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                path = os.path.relpath(os.path.join(folder, name), ROOT)
                part = part_of(path)
                if part not in RANK:
                    continue
                with open(os.path.join(ROOT, path), errors="replace") as source:
                    for number, line in enumerate(source, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) in RANK and RANK[m.group(1)] > RANK[part]:
                            errors.append("%s:%d: %s includes %s, which is above it "
                                          "(docs/layering.md)" % (path, number, part, line.strip()))
    for error in errors:
        print("check_layering: " + error, file=sys.stderr)
    if not errors:
        print("check_layering: no include crosses a part upwards")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
