"""GitHub Actions workflows, read without running them: ``${{ }}`` expressions
(:mod:`.expressions`), shell lines (:mod:`.shell_line`) and the ``run_suite.py`` invocations
of ``.github/workflows`` with their jobs' runners and budgets (:mod:`.invocations`)."""
