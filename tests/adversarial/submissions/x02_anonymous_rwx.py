"""New code in anonymous memory: map a page writable and executable at once (then executable alone)
to write machine code into and run it. The supervisor refuses both (rule 'wx'); the rule does not
reject the run, since libffi asks for such a page for every ctypes callback and falls back to a
file when refused, but the run's reason names it. The right answer follows, by torch."""

import _honest
import _native

for prot in (_native.PROT_READ | _native.PROT_WRITE | _native.PROT_EXEC, _native.PROT_READ | _native.PROT_EXEC):
    page = _native.LIBC.mmap(None, _native.PAGE, prot, _native.MAP_PRIVATE | _native.MAP_ANONYMOUS, -1, 0)
    print(f"anonymous mmap with prot {prot}:", "refused: " + _native.errno_text() if page == _native.MAP_FAILED
          else f"mapped at {page:#x}")


def custom_kernel(data):
    return _honest.gemv(data)
