"""Helpers the IMPI daemon tests share (impi_hostile_test.py, relay_test.py): child processes
whose output is collected by threads, and the clean-up of every process and socket a test made."""
import os
import re
import subprocess
import threading
import time

PROCS, SOCKS = [], []


class Proc:
    """A child whose output is collected by threads (it can never block on a pipe)."""

    def __init__(self, argv, env=None, log_level=None):
        e = dict(os.environ)
        if log_level is not None:
            e.setdefault("WANMPI_LOG_LEVEL", str(log_level))
        e.update(env or {})
        self.p = subprocess.Popen(argv, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        PROCS.append(self)
        self.out, self.err = [], []
        self.cv = threading.Condition()
        self.t = [threading.Thread(target=self._pump, args=(s, b), daemon=True)
                  for s, b in ((self.p.stdout, self.out), (self.p.stderr, self.err))]
        for t in self.t:
            t.start()

    def _pump(self, stream, buf):
        for line in stream:
            with self.cv:
                buf.append(line)
                self.cv.notify_all()

    def wait_for(self, what, regex, timeout=30):
        buf = self.out if what == "out" else self.err
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for l in buf:
                    m = re.search(regex, l)
                    if m:
                        return m
                left = end - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and not any(t.is_alive()
                                                                        for t in self.t)):
                    raise AssertionError(f"no line matching {regex!r} from {self.p.args[0]}:\n"
                                         + "".join(buf))
                self.cv.wait(min(left, 0.2))

    def count(self, regex):
        with self.cv:
            return sum(1 for l in self.err if re.search(regex, l))

    def wait_count(self, regex, n, timeout=5):
        """Waits until n lines of stderr match regex."""
        end = time.monotonic() + timeout
        with self.cv:
            while sum(1 for l in self.err if re.search(regex, l)) < n:
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"fewer than {n} lines matching {regex!r}:\n"
                                         + "".join(self.err))
                self.cv.wait(min(left, 0.2))

    def finish(self, timeout=60):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise AssertionError(f"{self.p.args[0]} did not exit:\n{self.text()}")
        for t in self.t:
            t.join(5)
        return rc

    def text(self):
        with self.cv:
            return "".join(self.out) + "".join(self.err)


def cleanup():
    """Closes every socket in SOCKS and ends every process started through Proc."""
    for s in SOCKS:
        try:
            s.close()
        except OSError:
            pass
    for pr in PROCS:
        if pr.p.poll() is None:
            pr.p.terminate()
            try:
                pr.p.wait(5)
            except subprocess.TimeoutExpired:
                pr.p.kill()
                pr.p.wait()
