"""Adopting the runner in an existing repository: ``run_suite.py init`` surveys the tree's
registrations (:mod:`.survey`), derives a catalog from them (:mod:`.draft`), renders it as TOML
(:mod:`.catalog_text`) and writes it (:mod:`.init_command`)."""
