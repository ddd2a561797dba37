#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The PyTorch end-to-end check on the GPU, with the python3 found at run time
# (the GPU host's has torch, numpy and safetensors).
set -euo pipefail
PP_TEST_BACKEND=cuda exec "${PP_GPU_PYTHON:-python3}" "$(dirname "$0")/../pipelines/torch_e2e.py"
