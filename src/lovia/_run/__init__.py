"""The runtime: the run loop, persistence at fixed points, resume, and the Runner facade."""
