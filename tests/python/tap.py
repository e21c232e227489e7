# SPDX-License-Identifier: BSD-2-Clause
"""A pytest plugin that prints TAP, as tests/run counts it (Debian 12
has no python3-pytest-tap): "1..N" once collected, then one line per
test, "ok N - nodeid", "not ok N - nodeid" (its failure as "# " lines
below) or "ok N - nodeid # SKIP why".  Load it with -p tap
(tests/python/run does); it silences pytest's own report, which would
break the lines.

A test's line is written when its teardown has run: a failing setup or
teardown fails it.  A module that fails to import is one "not ok".
"""
import os

import pytest

# stdout as it was before pytest captured it (plugins given with -p are
# imported before capturing starts)
_out = os.dup(1)


def _emit(line):
    os.write(_out, (line + "\n").encode("utf-8", "replace"))


def _comment(text):
    for line in str(text).splitlines():
        _emit("# " + line)


class _Tap:
    def __init__(self):
        self.n = 0
        self.planned = False
        self.pending = {}   # nodeid: (state, why)
        self.said = {}      # why: the test that said it first

    def line(self, state, name, why=""):
        self.n += 1
        name = name.replace("#", "\\#")
        if state == "skip":
            _emit(f"ok {self.n} - {name} # SKIP {why}".rstrip())
        else:
            _emit(f"{'ok' if state == 'ok' else 'not ok'} {self.n} - {name}")
            if state != "ok" and why:
                # a failed session fixture fails every test the same way
                if why in self.said:
                    _comment(f"(as test {self.said[why]})")
                else:
                    self.said[why] = self.n
                    _comment(why)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        broken = getattr(session, "_tap_broken", [])
        _emit(f"1..{len(session.items) + len(broken)}")
        self.planned = True
        for name, why in broken:
            self.line("fail", name, why)

    def pytest_collectreport(self, report):
        if report.failed:
            # reported once the plan is out
            self._broken.append((report.nodeid or "collection", str(report.longrepr)))

    def pytest_sessionstart(self, session):
        self._broken = []
        session._tap_broken = self._broken

    def pytest_runtest_logreport(self, report):
        state, why = self.pending.get(report.nodeid, ("ok", ""))
        if report.skipped and state == "ok":
            if hasattr(report, "wasxfail"):
                state, why = "ok", ""
            else:
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
                state, why = "skip", str(reason).removeprefix("Skipped: ")
        elif report.failed:
            what = "" if report.when == "call" else f"(in {report.when})\n"
            state, why = "fail", what + str(report.longrepr)
            for name, text in (("stdout", report.capstdout), ("stderr", report.capstderr)):
                if text:
                    why += f"\n--- captured {name} (its end)\n" + "\n".join(text.splitlines()[-60:])
        self.pending[report.nodeid] = (state, why)
        if report.when == "teardown":
            self.line(state, report.nodeid, why)
            del self.pending[report.nodeid]


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    # pytest's own report would break the lines: off (its options stay,
    # as the assertion messages read them)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        config.pluginmanager.unregister(reporter)
    config.pluginmanager.register(_Tap(), "tap-output")
