"""The networks the simulator runs and their compiled files: the four MLPerf Tiny graphs
(``architectures.py``), int8 inference (``inference.py``; ``once.py`` computes it once per model
file and input), the accelerator configurations a file is compiled for (``accelerator.py``), the
model and runner file formats and the compiler (``modelfile.py``) with the Vela estimate a file
carries (``estimate.py``), and the TFLite export (``tflite_export.py``). Imports nothing else of the
simulator."""
