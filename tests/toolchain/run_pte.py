"""Run a ``.pte`` with ExecuTorch's own runtime (the wheel's pybindings) and the network in eager
PyTorch.

Runs in the TOOLCHAIN's python (``tests/toolchain/test_real_toolchain.py`` starts it with the
repository on ``PYTHONPATH``): ``python run_pte.py NETWORK PROGRAM INPUT`` prints one JSON line,
``{"pte": [...], "eager": [...]}``, the flattened float32 outputs of the program
(``executorch.runtime.Runtime``) and of the module ``export.py`` builds, on the raw float32 input
file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from executorch.runtime import Runtime

from fvp_harness.sim.networks.architectures import get_architecture
from fvp_harness.sim.networks.modelfile import compile_model
from fvp_harness.toolchain.export import build_module, float_parameters


def main(network: str, program: str, input_file: str) -> None:
    arch = get_architecture(network)
    x = torch.from_numpy(np.fromfile(input_file, dtype="<f4").reshape(1, *arch.input_shape))
    method = Runtime.get().load_program(Path(program)).load_method("forward")
    pte = method.execute([x])[0]
    with torch.no_grad():
        eager = build_module(arch, float_parameters(compile_model(arch, 0)))(x)
    print(
        json.dumps({"pte": pte.numpy().ravel().tolist(), "eager": eager.numpy().ravel().tolist()})
    )


if __name__ == "__main__":
    main(*sys.argv[1:4])
