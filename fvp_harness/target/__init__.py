"""Where commands run. The only package that spawns processes or opens sockets (besides ``sim``)."""
