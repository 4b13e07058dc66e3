"""The `swadiff` console command: exec the binary packaged with this module."""
import os
import sys


def binary_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "swadiff")


def main() -> None:
    exe = binary_path()
    if not os.access(exe, os.X_OK):
        sys.stderr.write(f"swadiff: the packaged binary {exe} is missing or not executable; reinstall with "
                         "`pip install .` from a swadiff checkout\n")
        raise SystemExit(3)
    os.execv(exe, [exe] + sys.argv[1:])
