"""Waiting on a condition rather than for a time: a test goes on as soon as what it needs has happened."""

import time


def wait_until(condition, timeout: float, what="", interval: float = 0.02):
    """Poll `condition` until it returns something true, and return that.

    Past `timeout` seconds fail, saying what did not happen (`what`: a sentence, or a callable giving the state
    at that moment). The bound only stops a broken run from hanging; nothing depends on how long it took.
    """
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout}s: {what() if callable(what) else what or condition}")
        time.sleep(interval)
    return result
