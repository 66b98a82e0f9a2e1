"""Compare SGLang's own ``test/run_suite.py`` selection with ours on an SGLang checkout.

``python -m tools.compare_sglang CHECKOUT`` runs both on a copy of the checkout for every case
upstream knows and prints where they differ; ``python -m tools.compare_sglang.bench CHECKOUT``
times upstream's collection against our dry run and init. Figures: RESULTS.md beside this file.
"""
