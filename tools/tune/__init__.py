"""The kernel tuner's parts: the variant table (:mod:`.variants`), builds (:mod:`.build`),
timed shapes (:mod:`.shapes`), correctness checks (:mod:`.checks`), peers (:mod:`.peers`) and
the report (:mod:`.report`). The command is ``python -m tools.tune_kernels``."""
