#!/usr/bin/env python3
"""scripts/check_docs.py on a small made-up tree and a stand-in doppio: each kind of broken
link, unknown command and misplaced flag is reported on its line, and a correct tree passes.

    tests/tools/check_docs_test.py --source SRC
"""

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap

# What `doppio help`, `doppio help <command>` and `doppio --helpfull` print, in the
# real tool's format.
FAKE_DOPPIO = r'''#!/bin/sh
case "$1 $2" in
  "help ") printf 'usage: doppio <command> <args>\n\ncommands:\n  help            list\n  time            benchmark\n  train           train a model\n' ;;
  "help train") printf 'doppio train: train\n\nflags:\n  --solver (the solver) default: ""\n  --snapshot (resume) default: ""\n' ;;
  "help time") printf 'doppio time: time\n\nflags:\n  --model (the net) default: ""\n' ;;
  "help help") printf 'doppio help: list\n\nflags:\n' ;;
  "--helpfull ") printf '  Flags from /src/tools/doppio/train_command.cpp:\n    -snapshot (resume) type: string default: ""\n    -solver (the solver) type: string default: ""\n  Flags from /src/tools/doppio/time_command.cpp:\n    -model (the net) type: string default: ""\n  Flags from src/logging.cc:\n    -log_dir (where) type: string default: ""\n' ;;
esac
'''

GOOD = {
    "README.md": """\
        # Doppio

        Read [the guide](docs/README.md) and [training](docs/training.md#resuming-a-run).
        An image: ![plot](docs/plot.png). A site: [Caffe](https://caffe.berkeleyvision.org).

            build/tools/doppio train --solver=s.prototxt --log_dir=/tmp | tee log  # --nope
            mpirun -np 2 --oversubscribe doppio train \\
                --solver=s.prototxt

        Run `doppio time --model=m.prototxt`; `--solver=x` is train's; `scripts/x.sh --depth`.
        It prints `setup: built build/tools/doppio and the tests`.
        """,
    "docs/README.md": """\
        # Guide

        - [Training](training.md)
        - [Back](../README.md#doppio) and [here](#guide)
        """,
    "docs/training.md": """\
        # Training

        ## Resuming a run

        ## Resuming a run

        See [the second](#resuming-a-run-1) and the `doppio help train` list.
        """,
    "docs/plot.png": "",
    "scripts/x.sh": "echo --depth\n",
}

BROKEN = {
    "docs/training.md": """\
        # Training

        A [missing page](nothing.md), a [missing heading](../README.md#no-such-part),
        [here too](#nowhere). Code is not checked for links: `[x](absent.md)`.

            build/tools/doppio trian --solver=s.prototxt
            OMP_NUM_THREADS=1 doppio time --solver=s.prototxt

        And `doppio train --sync=overlap`, `--bogus_flag`.
        """,
}


def write_tree(root, files):
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))


def check_docs(source, root):
    doppio = os.path.join(root, "fake-doppio")
    with open(doppio, "w", encoding="utf-8") as f:
        f.write(FAKE_DOPPIO)
    os.chmod(doppio, 0o755)
    result = subprocess.run(
        [sys.executable, os.path.join(source, "scripts", "check_docs.py"), "--doppio", doppio,
         "--root", root], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        check=False)
    return result.returncode, result.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        write_tree(root, GOOD)
        code, output = check_docs(args.source, root)
        if code != 0 or "0 problems" not in output:
            raise AssertionError("a correct tree failed:\n" + output)

        write_tree(root, BROKEN)
        code, output = check_docs(args.source, root)
        expected = [
            "docs/training.md:3: link to nothing.md: no such file",
            "docs/training.md:3: link to ../README.md#no-such-part: no such heading",
            "docs/training.md:4: link to #nowhere: no such heading",
            "docs/training.md:6: `doppio trian`: no such command",
            "docs/training.md:7: `doppio time --solver`: no such flag",
            "docs/training.md:9: `doppio train --sync`: no such flag",
            "docs/training.md:9: `--bogus_flag`: no doppio command, script or tool has it",
            # README.md links at a heading the new training.md no longer has.
            "README.md:3: link to docs/training.md#resuming-a-run: no such heading",
        ]
        missing = [line for line in expected if line not in output]
        if code != 1 or missing:
            raise AssertionError("expected exit 1 and %s in:\n%s" % (missing, output))
        if "%d problems" % len(expected) not in output:
            raise AssertionError("reported other problems besides these:\n" + output)
    print("check_docs_test: passed")


if __name__ == "__main__":
    main()
