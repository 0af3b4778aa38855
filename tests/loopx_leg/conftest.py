"""The LoopX leg runs only through `make test-loopx`: nothing here is collected by pytest."""

collect_ignore_glob = ["*"]
