"""The runner's process exit codes (documented in the README's exit-code table)."""

EXIT_OK = 0  # every file passed, the shard was empty, or a dry run / matrix was printed
EXIT_TEST_FAILURES = 1  # a file failed, timed out or crashed (or was flaky with --fail-on-flaky)
EXIT_USAGE = 2  # bad flags, catalog, registrations, selection or environment variables
# Interrupted by a signal: 128 + the signal number (129 SIGHUP, 130 SIGINT, 143 SIGTERM).
EXIT_SIGNAL_BASE = 128
# stdout or stderr closed by its reader (``| head``): 128 + SIGPIPE, as a shell reports a program
# that SIGPIPE ended.
EXIT_OUTPUT_CLOSED = EXIT_SIGNAL_BASE + 13
