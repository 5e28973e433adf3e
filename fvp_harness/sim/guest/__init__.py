"""The Linux guest: a busybox ash (``shell.py`` running ``parse.py``'s tree, ``arith.py``,
``io.py``), its builtins and applets, the guest file system (``fs.py``) and the seam to the programs
it executes (``programs.py``: a registry keyed by magic bytes, the ``GuestContext`` protocol;
``context.py`` implements it). It is typed against ``machine.GuestMachine``, a protocol, and never
imports a platform or a workload."""
