"""A first run that loses nothing: without NumPy or pandas the array functions take
nothing from the ring; results print readably; the version is the installed one."""

import importlib.metadata
import pathlib
import shutil
import subprocess
import sys
import textwrap
import venv

import telering
from telering import Category, Recorded


def installed_package(target):
    """Copies the installed `telering` (package and distribution metadata) into
    `target`, for an interpreter that has nothing else."""
    package = pathlib.Path(telering.__file__).parent
    assert list(package.glob("_native*")), "telering is not installed: %s" % package
    shutil.copytree(package, target / "telering", ignore=shutil.ignore_patterns("__pycache__"))
    for info in package.parent.glob("telering-*.dist-info"):
        shutil.copytree(info, target / info.name)
    return target


def test_without_numpy_the_array_functions_take_nothing_from_the_ring(tmp_path, tdir):
    with telering.Telemetry("first", enabled=True, dir=tdir) as t:
        for i in range(4):
            t.record(Category.CUSTOM, "ev", i)
    ring = tdir / "first"
    assert telering.stat(ring)["fill"] == 4
    # A virtual environment with the standard library and telering only.
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = installed_package(tmp_path / "site")
    code = textwrap.dedent(
        """
        import importlib.util, sys
        sys.path.insert(0, sys.argv[2])
        assert importlib.util.find_spec("numpy") is None and importlib.util.find_spec("pandas") is None
        import telering
        path = sys.argv[1]
        def attempt(what, call):
            try:
                call()
            except ImportError as e:
                print(what, "ImportError:", e)
            print(what, "fill", telering.stat(path)["fill"])
        attempt("read_numpy", lambda: telering.read_numpy(path))
        attempt("load", lambda: telering.load(path))
        with telering.SharedRingBuffer(path) as ring:
            attempt("to_numpy", ring.to_numpy)
            print("size", ring.size())
        """
    )
    out = subprocess.run(
        [str(python), "-c", code, str(ring), str(site)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines == [
        "read_numpy ImportError: telering's array functions need NumPy: pip install numpy "
        "(or reinstall telering with its extra from the clone, pip install './python[numpy]', "
        "or from a wheel, pip install 'WHEEL[numpy]')",
        "read_numpy fill 4",
        "load ImportError: telering.load needs pandas: pip install pandas "
        "(or reinstall telering with its extra from the clone, pip install './python[pandas]', "
        "or from a wheel, pip install 'WHEEL[pandas]')",
        "load fill 4",
        "to_numpy ImportError: telering's array functions need NumPy: pip install numpy "
        "(or reinstall telering with its extra from the clone, pip install './python[numpy]', "
        "or from a wheel, pip install 'WHEEL[numpy]')",
        "to_numpy fill 4",
        "size 4",
    ], out.stdout
    # And every event is still there for the reader that has NumPy.
    assert telering.read_numpy(ring)["value"].tolist() == [0, 1, 2, 3]


def test_a_recording_result_prints_by_name(capsys):
    with telering.Telemetry("printed", enabled=True, exporter="nop", enabled_metrics="agent_*") as t:
        written = t.record(Category.CUSTOM, "agent_queue", 1)
        print(written)
        print(t.record(Category.CUSTOM, "other", 1))
        print(f"{written} {written:d}")
    assert capsys.readouterr().out == "Recorded.WRITTEN\nRecorded.FILTERED\nRecorded.WRITTEN 0\n"
    # Still the int it always was.
    assert written == 0 and written is Recorded.WRITTEN and isinstance(written, int)


def test_the_version_is_the_installed_distributions():
    assert telering.__version__ == importlib.metadata.version("telering")


def test_pytest_runs_from_the_package_directory():
    # The sources sit under pysrc/, so Python started in python/ imports the
    # installed package (with its extension), not the bare sources.
    python_dir = pathlib.Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", "import telering._native, telering; print(telering.__file__)"],
        cwd=python_dir,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert not out.stdout.startswith(str(python_dir)), out.stdout
