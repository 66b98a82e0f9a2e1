"""The commands of ``python -m jit_kernel``: ``precompile`` and the ``.clangd`` writer."""
