# nvcodeobj: NVIDIA programs without a driver: cubin / fatbin / PTX reading (libelf, zstd),
# kernel metadata from .nv.info, the occupancy model, NVRTC compile (dlopen). Linked into
# libhsad always; needs no CUDA headers or libraries to build.
HSAD_LIB_SRCS += nvcodeobj/pool.c nvcodeobj/cubin.c nvcodeobj/program.c nvcodeobj/occupancy.c \
  nvcodeobj/nvrtc.c
HEADERS += nvcodeobj/hsad_nv_codeobj.h

# ---- Criterion test: reads tests/data/nvidia/ (committed; scripts/nv-testdata.sh makes it on a
# CUDA machine). With CUDA's headers present it also checks the declared constants and the NVRTC
# table against them; without, that test reports itself skipped.
NV_CUDA_INC := $(wildcard /usr/local/cuda/include/nvrtc.h)
NV_TEST := $(TESTDIR)/test_nv_codeobj
# (a build without AMD links nvcodeobj for hsad run's NVRTC, but its hsad has no `inspect`,
# which this test's CLI case runs: listed with AMD only)
ifneq ($(filter amd,$(BACKEND_LIST)),)
TEST_BINS += $(NV_TEST)
endif
$(NV_TEST): tests/test_nv_codeobj.c nvcodeobj/nv_nvrtc.h $(LIBDIR)/libhsad.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DNV_DATADIR='"$(abspath tests/data/nvidia)"' \
	  -DNV_KERNDIR='"$(abspath kernels/cuda)"' -DNV_HSAD='"$(abspath $(BINDIR)/hsad)"' \
	  $(if $(NV_CUDA_INC),-DHSAD_TEST_CUDA_INCLUDE -idirafter /usr/local/cuda/include) $< -o $@ \
	  $(LDFLAGS) $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm
$(NV_TEST): | $(BINDIR)/hsad
