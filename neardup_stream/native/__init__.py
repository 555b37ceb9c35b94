"""How the compiled kernels run: ahead-of-time machine code when it fits, numba's JIT if not.

Every kernel is written once, as numba-compatible Python, and declared with `native.njit`
(`kernel.Kernel`). A call runs the export of the extension module built ahead of time
(`build`, with numba's pycc, while the package is built) whose argument types match the
call's exactly (`argkey`, `aot`); any other call, or any kernel without an export, goes to
numba's JIT, which is imported only then. A process whose kernels all have exports never
imports numba.
"""

from neardup_stream.native.kernel import Kernel, njit

__all__ = ["Kernel", "njit"]
