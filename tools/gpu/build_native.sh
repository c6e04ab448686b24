# Sourced by the device stages: builds jaxguide._native for this machine's python3 into
# jaxguide/ (git-ignored), once per machine (a warm machine keeps it).
if ! python3 -c "import jaxguide._native" 2>/dev/null; then
  cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$(command -v python3)" \
    -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" > /dev/null
  cmake --build build/device -j "$(nproc)" > /dev/null
  cp build/device/_native*.so jaxguide/
fi
python3 -c "import jaxguide._native as n; print('jaxguide._native', n.__file__)"
