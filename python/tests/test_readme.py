"""The README's Python example runs as printed, and prints what the README says."""

import re
import subprocess
import sys

from conftest import REPO


def python_section():
    text = (REPO / "README.md").read_text()
    start = text.index("\n## Python\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_the_readme_example_runs_and_prints_what_it_shows(tmp_path):
    section = python_section()
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    outputs = re.findall(r"```text\n(.*?)```", section, re.S)
    example, expected = blocks[0], outputs[0]
    assert len(example.strip().splitlines()) == 5
    out = subprocess.run(
        [sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == expected


def test_the_readme_says_how_to_install():
    assert "pip install ./python" in python_section()


def test_the_install_before_the_first_example_brings_what_it_imports():
    section = python_section()
    install = re.findall(r"```sh\n(.*?)```", section, re.S)[0]
    example = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    assert section.index(install) < section.index(example)
    # The example reads into NumPy, which only the `numpy` extra installs.
    assert "read_numpy" in example
    # After making a virtual environment, the install itself is one line.
    assert 'pip install "./python[numpy]"' in install.strip().splitlines(), install

