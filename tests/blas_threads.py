"""One BLAS / OpenMP thread per test process: imported first by tests/conftest.py, before numpy, so
that OpenBLAS reads it when it loads; the xdist workers and the CLI child processes inherit it.

`make test` runs one xdist worker per core, and each worker's OpenBLAS threads spinning on the other
worker's core about doubled the CPU time of the learned attack fits in the generator's report
(tests/test_generate*.py). A variable already set is left as it is. The Numba kernels keep their
own threads (vistest.visibility), but they wait passively: under Numba's OpenMP threading layer
(``omp``, the one installed here) each parallel kernel's threads otherwise spin after the kernel
returns (GNU OpenMP's active wait), on the other worker's core. A call of the containment kernel
(``boxes`` occlusion with moving objects calls it once per frame) cost ~15 ms of CPU spinning for
~0.05 ms of work (issue 47, measured with 2 threads on this 2-core machine).
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
