#!/usr/bin/env python3
"""Fails when a source or header includes a part of Doppio above its own (docs/layering.md).

    scripts/check_layering.py        # from anywhere; exit 1 naming each upward include

The parts by folder, lowest first: util (base), core, data, layers, solvers, parallel. A
file may include its own part and any part below it; tools/, tests/ and bench/ may include
all. The includes that cross upwards today are listed in KNOWN with the reason they remain:
a listed include that disappears must be taken off the list (the check says so), and a new
crossing fails.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Lowest first. data sits below layers: data layers read through data/, not the reverse.
ORDER = ["util", "core", "data", "layers", "solvers", "parallel"]
RANK = {part: i for i, part in enumerate(ORDER)}

# (file, included part): why it is still allowed.
KNOWN = {
    ("include/doppio/util/cuda_kernels.cuh", "core"): "GpuContext, a device-part class kept in core/",
    ("include/doppio/util/device_math.hpp", "core"): "takes GpuContext and Blob",
    ("src/util/math_functions.cu", "core"): "GpuContext, a device-part class kept in core/",
    ("src/util/cudnn.cpp", "core"): "takes GpuContext and Blob",
    ("include/doppio/util/io.hpp", "core"): "reads and writes the schema's messages",
    ("include/doppio/util/synthetic_inputs.hpp", "core"): "builds inputs for a Net (doppio time)",
    ("src/util/synthetic_inputs.cpp", "core"): "asks the layer registry which layers read data",
}

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
    seen = set()
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
                        if not m or m.group(1) not in RANK or RANK[m.group(1)] <= RANK[part]:
                            continue
                        if (path, m.group(1)) in KNOWN:
                            seen.add((path, m.group(1)))
                            continue
                        errors.append("%s:%d: %s includes %s, which is above it (docs/layering.md)"
                                      % (path, number, part, line.strip()))
    for path, included in sorted(set(KNOWN) - seen):
        errors.append("%s no longer includes %s: take it off KNOWN in %s"
                      % (path, included, os.path.relpath(__file__, ROOT)))
    for error in errors:
        print("check_layering: " + error, file=sys.stderr)
    if not errors:
        print("check_layering: no include crosses a part upwards (%d known crossings left)"
              % len(KNOWN))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
