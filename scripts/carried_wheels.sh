# Sourced by the GPU scripts: install the wheels carried to a machine without a package registry
# (.whl: CuTe DSL; .whl-cluster or .whl-dask: dask, distributed; .whl-service: fastapi, uvicorn,
# python-multipart, jinja2; scripts/two_gpu_check.sh says how to download them) into /tmp/site and
# put them on PYTHONPATH.
for wheels in .whl .whl-dask .whl-cluster .whl-service; do
  if compgen -G "$wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      "$wheels"/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/site"
  fi
done
# The CuTe DSL wheel reaches its package through a .pth file, which PYTHONPATH entries ignore.
if [ -d /tmp/site/nvidia_cutlass_dsl/python_packages ]; then  # (an if: sourcing under set -e must not fail)
  export PYTHONPATH="$PYTHONPATH:/tmp/site/nvidia_cutlass_dsl/python_packages"
fi
