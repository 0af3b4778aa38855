"""Prints something that is not JSON."""

import sys

sys.stdin.read()
sys.stdout.write("<<< definitely not json: SECRET-GARBAGE-TOKEN >>>")
