"""Readers of the file formats ExecuTorch writes, from their schemas: the bounds-checked flatbuffer
reader (``flatbuf``) and the program reader (``pte``: a ``.pte``'s execution plans, operators,
delegates and memory plan). A layer of its own, below ``scenario/`` (which refuses programs a
platform cannot run) and ``report/``."""
