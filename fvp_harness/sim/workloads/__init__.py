"""The programs the guest runs: the emulated ExecuTorch ``executor_runner`` (``executor_runner``),
its VGF build (``vgf_runner.py``), the ETDump writer (``etdump.py``), and their registration as
guest programs (``programs.py``). They run against ``guest.programs.GuestContext`` and know no
platform."""
