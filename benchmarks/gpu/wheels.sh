#!/usr/bin/env bash
# HERE, on a machine that reaches PyPI: the wheels a device machine's bare image lacks for `dvc repro` of pelab
# (Python 3.12, x86-64), at the versions constraints.txt pins, into .whl/ (git-ignored, about 40 MB). The device
# tool carries it (carry: [".whl"]); benchmarks/gpu/start.sh installs it there.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
rm -rf .whl && mkdir .whl
# pelab's direct dependencies but torch (the image's CUDA build), at the versions constraints.txt pins; their own
# dependencies resolve freely for Python 3.12 (some pins of constraints.txt, made on 3.11, have no 3.12 wheel)
deps=$(python3 - <<'PY'
import re
import tomllib

pins = dict(line.strip().split("==") for line in open("constraints.txt") if "==" in line)
pins = {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in pins.items()}
for dep in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]:
    name = re.split(r"[<>=!~ ]", dep)[0]
    if name != "torch":
        print(f"{name}=={pins[re.sub(r'[-_.]+', '-', name).lower()]}", end=" ")
PY
)
# hydra's antlr4 runtime is published as a source archive only: build its (pure Python) wheel here first
python3 -m pip wheel --quiet --no-deps -c constraints.txt -w .whl antlr4-python3-runtime
python3 -m pip download --quiet --only-binary=:all: --find-links .whl --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl $deps
# keep the image's own packages (its numpy, pandas, torch, ... are built for it)
image=$(grep -v '^#' benchmarks/gpu/image_packages.txt | tr ' ' '\n' | sed '/^$/d')
for wheel in .whl/*.whl; do
  name=$(basename "$wheel" | cut -d- -f1 | tr 'A-Z_.' 'a-z--')
  if grep -qx "$name" <<<"$image"; then rm "$wheel"; fi
done
echo "$(ls .whl | wc -l) wheels, $(du -sh .whl | cut -f1) in .whl/"
