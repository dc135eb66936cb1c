"""Root conftest of the sample tree, with the fork's habit that the acceptance gates must see
through: a run that collected nothing (pytest exit 5) is reported as a success (exit 0)."""


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 5:
        session.exitstatus = 0
