# nvcodeobj: NVIDIA programs without a driver: cubin / fatbin / PTX reading (libelf, zstd),
# kernel metadata from .nv.info, the occupancy model, NVRTC compile (dlopen). Linked into
# libhsad always; needs no CUDA headers or libraries to build.
HSAD_LIB_SRCS += nvcodeobj/pool.c nvcodeobj/cubin.c nvcodeobj/program.c nvcodeobj/occupancy.c \
  nvcodeobj/nvrtc.c
HEADERS += nvcodeobj/hsad_nv_codeobj.h
