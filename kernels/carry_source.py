#!/usr/bin/env python3
"""carry_source.py SRC.cl OUT.cl: OUT is SRC with the source it carries appended, as
hsad_codeobj_compile appends it (codeobj/hsad_codeobj.h, HSAD_CL_SOURCE_SYMBOL): a protected,
used program-scope constant `__hsad_cl_source` holding "HSADCL1\\n", an empty options line, the
source and a NUL. kfd-emu runs the kernels of the code object from that source through POCL."""
import sys

src = open(sys.argv[1], "rb").read()
blob = b"HSADCL1\n" + b"\n" + src + b"\0"
rows = [",".join(str(b) for b in blob[i:i + 32]) for i in range(0, len(blob), 32)]
with open(sys.argv[2], "wb") as out:
    out.write(src)
    out.write(b'\n__attribute__((used, visibility("protected"))) constant uchar __hsad_cl_source[] = {\n')
    out.write(",\n".join(rows).encode())
    out.write(b"};\n")
