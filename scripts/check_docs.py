#!/usr/bin/env python3
"""Checks the documentation against the tree and the tool.

  check_docs.py --doppio build/tools/doppio [--root .]

- Every relative link in a Markdown file of the repository points at a file or folder that
  exists, and a link with '#anchor' at a heading of that file (GitHub's anchor rules).
- Every `doppio <command>` that README.md or docs/ show in code (a code span or block) is
  a command of `doppio help`, and every --flag written after it on that command line is
  one of `doppio help <command>`'s flags or one that every command reads (glog's, the
  library's). A code span that is only a flag (`--sync=overlap`) names a flag of some
  doppio command, or one that a script or tool of the repository spells out.

Prints one line per problem (file:line: what) and exits 1 if there is any.
"""

import argparse
import os
import re
import subprocess
import sys

# Options of the programs beside doppio that the guide shows with a flag alone in a code
# span: mpirun's, Slurm's, cmake's and ctest's.
OTHER_TOOLS_FLAGS = {
    "--allow-run-as-root", "--oversubscribe", "--mca", "--bind-to", "--map-by",
    "--hostfile", "--host", "--signal", "--requeue", "--output-on-failure", "--test-dir",
    "--timeout", "--build", "--target", "--help",
}
# What may stand before doppio on a command line that runs it: a launcher, or variables.
LAUNCHERS = {"mpirun", "mpiexec", "srun", "nice", "taskset", "numactl", "time", "env", "sudo",
             "timeout", "gdb", "valgrind", "compute-sanitizer", "exec", "$"}

LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# `doppio` as a program: at the start, after a space, '/' or '(' (build/tools/doppio).
DOPPIO_CALL = re.compile(r"(?:^|(?<=[\s/(]))doppio[ \t]+([a-z][a-z_]*)(.*)")
SEGMENT_START = re.compile(r"(?:\||;|&&|\|\||\$\(|`)\s*")
FLAG = re.compile(r"(?<![\w-])--([A-Za-z][A-Za-z0-9_-]*)")
SHELL_END = re.compile(r"\s(?:\||;|&&|\|\||>|2>|<)\s|\s#\s|$")


def slug(heading):
    """GitHub's anchor of a heading: the text as shown, lowercase, punctuation dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


class Document:
    """A Markdown file split into prose lines and code (fenced or indented blocks)."""

    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.lines = f.read().split("\n")
        self.code_lines = set()
        fence = None
        previous_blank = True
        for number, line in enumerate(self.lines, 1):
            stripped = line.lstrip()
            if fence is not None:
                self.code_lines.add(number)
                if stripped.startswith(fence):
                    fence = None
            elif stripped.startswith("```") or stripped.startswith("~~~"):
                fence = stripped[:3]
                self.code_lines.add(number)
            elif line.startswith("    ") and (previous_blank or number - 1 in self.code_lines):
                # An indented block: four spaces after a blank line, outside a list item's
                # continuation (which follows text, not a blank line, in this repository).
                self.code_lines.add(number)
            previous_blank = not line.strip()
        self.anchors = set()
        seen = {}
        for number, line in enumerate(self.lines, 1):
            if number in self.code_lines:
                continue
            match = HEADING.match(line)
            if match:
                base = slug(match.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                self.anchors.add(base if count == 0 else "%s-%d" % (base, count))

    def prose(self):
        for number, line in enumerate(self.lines, 1):
            if number not in self.code_lines:
                yield number, line

    def code(self):
        """Pieces of shell: each code block line (continuations joined), each code span."""
        joined, start = "", None
        for number, line in enumerate(self.lines, 1):
            if number not in self.code_lines:
                for match in CODE_SPAN.finditer(line):
                    yield number, match.group(2), False
                continue
            start = start or number
            joined += line.rstrip().rstrip("\\") + " "
            if not line.rstrip().endswith("\\"):
                yield start, joined, True
                joined, start = "", None


class Tool:
    """What `doppio help` says: the commands, each one's flags, and the flags of all."""

    def __init__(self, binary):
        self.binary = binary
        usage = self.run("help")
        self.commands = set()
        for line in usage.split("\n"):
            match = re.match(r"^  ([a-z][a-z_]*)\s+\S", line)
            if match:
                self.commands.add(match.group(1))
        if not self.commands:
            raise SystemExit("check_docs: `%s help` listed no commands:\n%s" % (binary, usage))
        self.flags = {c: set(FLAG.findall(self.run("help", c))) for c in self.commands}
        # Flags the library and glog define serve every command; another command's do not.
        everything, defined_in_tools, in_tools = set(), set(), False
        for line in self.run("--helpfull").split("\n"):
            match = re.match(r"^\s*Flags from (.*):$", line)
            if match:
                in_tools = "tools/doppio/" in match.group(1)
            else:
                flag = re.match(r"^\s+-([A-Za-z][A-Za-z0-9_]*) \(", line)
                if flag:
                    everything.add(flag.group(1))
                    if in_tools:
                        defined_in_tools.add(flag.group(1))
        self.common = everything - defined_in_tools
        self.all = everything.union(*self.flags.values())

    def run(self, *args):
        result = subprocess.run([self.binary, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, check=False)
        return result.stdout


def repository_files(root):
    try:
        listed = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                check=True).stdout.split("\n")
        return [os.path.join(root, name) for name in listed if name]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            files += [os.path.join(folder, name) for name in names]
        return files


def spelled_flags(files):
    """Every --flag written in the repository's scripts, tools and sources."""
    flags = set()
    for path in files:
        if path.endswith(".md") or not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                flags.update(FLAG.findall(f.read()))
        except (UnicodeDecodeError, OSError):
            continue
    return flags


def check_links(document, documents, problems, counts):
    here = os.path.dirname(document.path)
    for number, line in document.prose():
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            target = match.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            counts["links"] += 1
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(here, path)) if path else document.path
            if not os.path.exists(full):
                problems.append("%s:%d: link to %s: no such file" % (document.path, number, path))
                continue
            if anchor and full.endswith(".md"):
                other = documents.get(full) or Document(full)
                if anchor not in other.anchors:
                    problems.append("%s:%d: link to %s#%s: no such heading" %
                                    (document.path, number, path or "", anchor))


def runs_doppio(before):
    """Whether a doppio that follows this text is the program a command line runs (and not
    a word of output such as 'built build/tools/doppio and the tests')."""
    # The program's own path (build/tools/doppio) is part of its name.
    before = re.sub(r"\S*$", "", SEGMENT_START.split(before)[-1])
    words = before.split()
    if not words:
        return True
    first = words[0]
    return first in LAUNCHERS or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", first) is not None


def check_commands(document, tool, spelled, problems, counts):
    for number, text, in_block in document.code():
        for call in DOPPIO_CALL.finditer(text):
            if not runs_doppio(text[:call.start()]):
                continue
            command, rest = call.group(1), call.group(2)
            counts["commands"] += 1
            if command not in tool.commands:
                problems.append("%s:%d: `doppio %s`: no such command (doppio help)" %
                                (document.path, number, command))
                continue
            rest = rest[:SHELL_END.search(rest).start()]
            for flag in FLAG.findall(rest):
                counts["flags"] += 1
                if flag not in tool.flags[command] and flag not in tool.common:
                    problems.append("%s:%d: `doppio %s --%s`: no such flag (doppio help %s)" %
                                    (document.path, number, command, flag, command))
        if not in_block:
            alone = re.match(r"^--([A-Za-z][A-Za-z0-9_-]*)(?:[= ].*)?$", text.strip())
            counts["flags"] += alone is not None
            if alone and alone.group(1) not in tool.all and alone.group(1) not in spelled \
                    and "--" + alone.group(1) not in OTHER_TOOLS_FLAGS:
                problems.append("%s:%d: `--%s`: no doppio command, script or tool has it" %
                                (document.path, number, alone.group(1)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doppio", required=True, help="the doppio binary to ask")
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    args = parser.parse_args()
    root = os.path.normpath(os.path.abspath(args.root))
    files = repository_files(root)
    markdown = sorted(p for p in files if p.endswith(".md") and os.path.isfile(p))
    documents = {os.path.normpath(p): Document(os.path.normpath(p)) for p in markdown}
    guide = [d for p, d in documents.items()
             if p == os.path.join(root, "README.md") or p.startswith(os.path.join(root, "docs") + os.sep)]
    tool = Tool(args.doppio)
    spelled = spelled_flags(files)
    problems = []
    counts = {"links": 0, "commands": 0, "flags": 0}
    for document in documents.values():
        check_links(document, documents, problems, counts)
    for document in guide:
        check_commands(document, tool, spelled, problems, counts)
    for problem in problems:
        print(problem.replace(root + os.sep, ""))
    print("check_docs: %d Markdown files (%d links), the guide's %d files (%d doppio command "
          "lines, %d flags): %d problems" % (len(documents), counts["links"], len(guide),
                                             counts["commands"], counts["flags"], len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
