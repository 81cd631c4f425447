#!/usr/bin/env bash
# The wheels the device machine lacks, for bench/gpu_check.sh (../shared/DEVICE.md):
# it has PyTorch, nvidia-ml-py, psutil, pyyaml and rich, not textual or nvitop. Run
# here, in the repository's root, before the device run; .whl/ is ignored by git and
# named in the run's carry. The versions are this venv's, so the device runs what CI
# tests (rich, nvidia-ml-py and psutil too, so that theirs cannot differ).
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
names=(textual rich markdown-it-py mdit-py-plugins mdurl platformdirs typing_extensions
       pygments linkify-it-py nvitop nvidia-ml-py psutil)
specs=()
for n in "${names[@]}"; do
  specs+=("$n==$($py -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$n")")
done
rm -rf .whl && mkdir .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${specs[@]}"
ls .whl
du -sh .whl
