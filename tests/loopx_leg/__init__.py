"""The real-LoopX leg (make test-loopx); not collected by the main suite."""
