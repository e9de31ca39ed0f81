"""The README's tour runs as written: each ```python block of the
"Tour" section, saved as a file of its own and run in a fresh process with
the default settings (no calibration, no environment variables), prints
the report shown in the text block after it. Line numbers in the notes are
the saved file's; counts that depend on the CPU (the table's numbers, the
machine code's stores) and the machine profile's loads line are compared by
form only, so the test holds on any x86 or AArch64 CI machine while the
text, the arrays, the fences, the peeled loops and the notes cannot drift
from what the code prints. Which side of the threshold a call falls on
depends on the machine's cache (the tour's jacobi is under it on our Intel
VM, over it on an AMD EPYC with 16 MiB of L3), so the calls line's counts
are compared by form too."""

import os
import re
import subprocess
import sys

import pytest

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def tour_blocks():
    """``[(python source, expected output)]`` of the README's tour."""
    with open(README) as f:
        text = f.read()
    tour = text[text.index("\n## Tour\n"):]
    tour = tour[:tour.index("\n### ")]
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", tour, re.M | re.S)
    pairs = []
    for (lang, source), (out_lang, output) in zip(blocks, blocks[1:]):
        if lang == "python" and out_lang == "":
            pairs.append((source, output))
    return pairs


def expected_pattern(output):
    """A regex of the expected output: counts in table rows and the machine
    code's store counts and the calls line's counts as any number (and the
    checks that failed in its fallbacks as any), the loads line as any
    text."""
    lines = []
    for line in output.rstrip("\n").splitlines():
        if line.startswith("loads: "):
            lines.append(r"loads: .*")
        elif line.startswith("calls: "):  # (with the failed checks, where a call fell back on this machine)
            # (and the staged calls where the CPU's profile checks for 4K aliasing: `B = A.copy()` places B's
            # rows a few bytes past A's modulo 4 KiB)
            lines.append(re.sub(r"\d+", r"\\d+", re.escape(line)).replace(
                r"run\-time\ check", r"run\-time\ check(\ \([^)]*\))?").replace(
                r"streamed,\ ", r"streamed,\ (\d+\ streamed\ through\ a\ staging\ buffer\ \([^)]*\),\ )?", 1))
        elif re.fullmatch(r"\s*\w+(\s+\d+){6}", line):                       # a table row
            name = line.split()[0]
            lines.append(r"\s*" + re.escape(name) + r"(\s+\d+){6}")
        else:
            line = re.escape(line)
            line = re.sub(r"machine\\ NT\\ stores:\\ \d+\\ vector,\\ \d+\\ scalar",
                          r"machine\\ NT\\ stores:\\ \\d+\\ vector,\\ \\d+\\ scalar", line)
            if line.startswith("fences:"):  # (another CPU's backend may split vector stores: a note says so)
                line += r"(\n  \(machine code: [^\n]*\))?"
            lines.append(line)
    return "\n".join(lines)


def test_the_tour_has_runnable_blocks_each_followed_by_its_output():
    pairs = tour_blocks()
    assert len(pairs) == 3 and all("print(" in source for source, _ in pairs)


@pytest.mark.parametrize("index", range(3))
def test_the_tour_runs_as_written_and_prints_what_the_readme_shows(index, tmp_path):
    source, output = tour_blocks()[index]
    path = tmp_path / f"tour_{index + 1}.py"
    path.write_text(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMJIT_")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(README)))] + [p for p in [env.get("PYTHONPATH")] if p]))
    done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.rstrip("\n")
    assert re.fullmatch(expected_pattern(output), printed), f"README shows:\n{output}\nthe code prints:\n{printed}"
