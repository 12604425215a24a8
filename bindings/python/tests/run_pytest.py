"""CTest's entry to the Python tests.

Exits 77 and prints "SKIPPED: ..." (CTest then reports the test as skipped,
never passed) when the interpreter lacks pytest or numpy, or when every test
of the file skipped itself (e.g. nbclient missing); otherwise pytest's status.
"""
import sys

try:
    import numpy  # noqa: F401
    import pytest
except ImportError as e:
    print(f"SKIPPED: {e.name} is not installed for {sys.executable} (apt-get install python3-{e.name})")
    sys.exit(77)


class Outcomes:
    def __init__(self):
        self.ran = 0
        self.skipped = []

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and not report.skipped:
            self.ran += 1
        elif report.skipped:
            self.skipped.append(str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else "")


outcomes = Outcomes()
status = pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[outcomes])
if status == 0 and outcomes.ran == 0 and outcomes.skipped:
    print("SKIPPED: " + "; ".join(sorted(set(outcomes.skipped))))
    sys.exit(77)
sys.exit(status)
