"""Repository maintenance (``python -m ci_runner.maintenance``): lints, JUnit merge, est_time.

* :mod:`.registration_lints`: registrations validate; none inside a package;
* :mod:`.workflow_coverage`: every catalog suite is run by a workflow (``check-workflow-dispatch``);
* :mod:`.junit_merge`: the merged JUnit of a sharded run against its plan;
* :mod:`.est_time`: declared est_time against measured run times, and the partition model file;
* :mod:`.flaky_report`: each file's and case's flake rate over many runs;
* :mod:`.rerun_report`: what ``run_suite.py --from-junit`` runs again.

Each module has a ``main(argv)`` that a command of :mod:`ci_runner.maintenance.__main__` calls.
None of them imports torch or a test file.
"""
