# tools/cuda-mock: a host-only libcuda.so.1 (tools/cuda-mock/cuda_mock.c) so the NVIDIA backend
# runs its tests where no NVIDIA GPU is (CI): tests/test_nvidia_mock.c is test_nvidia.c against
# it (HSAD_LIBCUDA). Built when BACKENDS has nvidia; never installed.
ifneq ($(filter nvidia,$(BACKEND_LIST)),)
CUDA_MOCK_LIB := $(LIBDIR)/hsad/cuda-mock/libcuda.so.1
$(CUDA_MOCK_LIB): tools/cuda-mock/cuda_mock.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libcuda.so.1 $< -o $@ $(LDFLAGS) -lpthread

NV_MOCK_TEST := $(TESTDIR)/test_nvidia_mock
TEST_BINS += $(NV_MOCK_TEST)
$(NV_MOCK_TEST): tests/test_nvidia_mock.c tests/test_nvidia.c $(LIBDIR)/libhsad.a $(CUDA_MOCK_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DNV_CUBIN='"$(abspath $(NV_CUBIN))"' \
	  -DNV_DATADIR='"$(abspath tests/data/nvidia)"' \
	  -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' -DNV_MOCK_LIB='"$(abspath $(CUDA_MOCK_LIB))"' $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lpthread -lm

# tests/test_nvidia_run.c against the mock (hsad run's NVIDIA path where there is no GPU)
NV_RUN_MOCK_TEST := $(TESTDIR)/test_nvidia_run_mock
TEST_BINS += $(NV_RUN_MOCK_TEST)
$(NV_RUN_MOCK_TEST): tests/test_nvidia_run.c $(BINDIR)/hsad $(BINDIR)/hsad-bench-nvidia $(NV_CUBIN_DEP) \
  $(CUDA_MOCK_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(NV_RUN_DEFS) -DNV_MOCK_LIB='"$(abspath $(CUDA_MOCK_LIB))"' $< -o $@ \
	  $(LDFLAGS) -lcriterion -ljson-c
endif
