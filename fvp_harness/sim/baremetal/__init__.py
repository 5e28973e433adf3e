"""The bare-metal Corstone-300/320 platforms: one launch runs one application, the emulated
``arm_executor_runner`` (``platform.py`` the model, ``runner.py`` the program, ``artifact.py`` its
"ELF", ``log.py`` its ET_LOG sites and texts, ``cost.py`` its Cortex-M and PMU numbers), with the
UART on stdout."""
