"""The real ExecuTorch toolchain: the wheel's C++ SDK and what the harness builds with it.

MERGE NOTE (w/runner): placeholder package file so ``toolchain.runner_build`` has a package; the
toolchain helper's ``__init__.py`` (``Toolchain``, ``find_toolchain``) replaces it as it is.
"""
