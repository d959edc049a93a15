#!/usr/bin/env python3
"""Checks that a command's progress on stderr arrives as it happens, through a pipe (not at exit).

    first_line_before_exit.py CMD ARGS...

runs CMD with stderr a pipe, reads its first stderr line and then checks that CMD is still running (its output was not
held back until exit: the step after that line takes a while); then reads the rest and waits. Prints
"first line before exit: <line>" and "exit status N" (1 and a message when the line came only at exit).
"""
import subprocess
import sys

proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
first = proc.stderr.readline().rstrip("\n")
running = proc.poll() is None
rest = proc.stderr.read()
status = proc.wait()
if not running:
    print("first stderr line arrived only when the process had exited: %r" % first)
    sys.exit(1)
print("first line before exit: " + first)
sys.stdout.write(rest)
print("exit status %d" % status)
