"""Double-forks a grandchild that leaves the session and would live on; writes the
grandchild's pid to argv[1] (through a pipe, so the parent answers only once the
grandchild exists), answers ``{}`` and exits."""

import os
import sys
import time

read_end, write_end = os.pipe()
if os.fork() == 0:  # the middle process
    if os.fork() == 0:  # the grandchild: its own session, out of the killed group
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)  # a daemon's stdio: the run's pipes close
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.write(write_end, str(os.getpid()).encode())
        os.close(write_end)
        while True:
            time.sleep(3600)
    os._exit(0)
os.close(write_end)
pid = os.read(read_end, 32).decode()
with open(sys.argv[1], "w") as handle:
    handle.write(pid)
os.wait()  # the middle process, so the grandchild is an orphan now
print("{}")
