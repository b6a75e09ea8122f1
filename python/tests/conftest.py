"""Suite-wide hooks: the table of errors that tests holding outputs against numpy references
record (fixture ``error_report``), printed at the end of the run — in the harness's output too,
where pytest's captured stdout is not."""

import pytest

_REPORT = pytest.StashKey[list]()


@pytest.fixture(scope="session")
def error_report(request) -> list:
    """Lines to print in the run's summary (a test appends one per comparison)."""
    return request.config.stash.setdefault(_REPORT, [])


def pytest_terminal_summary(terminalreporter, config) -> None:
    lines = config.stash.get(_REPORT, [])
    if lines:
        terminalreporter.write_sep("-", "outputs against numpy references")
        for line in lines:
            terminalreporter.write_line(line)
