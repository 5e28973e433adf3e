"""The Corstone-1000 A320 Linux platform: the FVP process (``platform.py``) composing its terminals,
the boot text, the serial console, the sshd, fault injection and the machine state the guest sees
(``machine.py``). It composes the guest (``sim/guest``) and the workloads that run in it; none of
them knows this platform."""
