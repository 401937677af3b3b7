#!/usr/bin/env bash
# Builds the Python wheel from this checkout (pip wheel ., scikit-build-core + nanobind), installs
# it into a fresh virtual environment and runs the pytest suite against the installed package,
# from outside the source tree. Build requirements are pinned with hashes
# (python/requirements-build.txt); NumPy, SciPy, pytest and torch are Debian's
# (scripts/debian-packages.txt), seen through --system-site-packages.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# build-wheel/ sits beside build/ and uses the same compiler name, so ccache hits the objects of
# make build (scikit-build-core would otherwise take CXX from sysconfig: x86_64-linux-gnu-g++).
export CCACHE_BASEDIR="$ROOT" CXX=${CXX:-c++} CC=${CC:-cc}
VENV=${BACKPLANE_PY_VENV:-$ROOT/build-venv}
rm -rf "$VENV" build-wheel/dist
/usr/bin/python3 -m venv --system-site-packages "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check --require-hashes -r python/requirements-build.txt
"$VENV/bin/pip" wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w build-wheel/dist .
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps build-wheel/dist/backplane-*.whl
cd "$(mktemp -d)"
"$VENV/bin/python" -c "import backplane, sys; print('backplane', backplane.__version__, 'from', backplane.__file__)"
OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/python/tests" "$@"
