# nvidia: the NVIDIA backend (CUDA driver API through libcuda.so.1, loaded with dlopen at run
# time: nothing of CUDA is needed to build or link libhsad). Built when BACKENDS has nvidia.
ifneq ($(filter nvidia,$(BACKEND_LIST)),)
HSAD_LIB_SRCS += nvidia/nv_cuda.c nvidia/nv_device.c nvidia/nv_queue.c nvidia/nv_memory.c \
  nvidia/nv_pool.c nvidia/nv_graph.c nvidia/nv_monitor.c nvidia/nv_variants.c
$(BUILD)/obj/hsa-dispatch/backend.o: CFLAGS += -DHSAD_WITH_NVIDIA
$(BUILD)/obj/hsa-dispatch/variants.o: CFLAGS += -DHSAD_WITH_NVIDIA

# cuda.h (to check nvidia/nv_cuda.h against) and nvcc (the tests' cubin), where installed
CUDA_HOME ?= /usr/local/cuda
CUDA_INC  ?= $(firstword $(wildcard $(CUDA_HOME)/include/cuda.h))
NVCC      ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc))
NV_ARCH   ?= sm_90
NV_FIXDIR := $(TESTDIR)/nvidia

# tests/test_nv_decls.c: the declarations against the real cuda.h (skipped without one)
NV_DECLS_TEST := $(TESTDIR)/test_nv_decls
TEST_BINS += $(NV_DECLS_TEST)
$(NV_DECLS_TEST): tests/test_nv_decls.c nvidia/nv_cuda.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(if $(CUDA_INC),-DNV_HAVE_CUDA_H -I$(dir $(CUDA_INC))) $< -o $@ $(LDFLAGS) \
	  -lcriterion

# the kernels of tests/test_nvidia.c, compiled for NV_ARCH when nvcc is there (the tests say
# they were skipped, and why, when it is not)
NV_CUBIN := $(NV_FIXDIR)/nv_kernels-$(NV_ARCH).cubin
ifneq ($(NVCC),)
$(NV_CUBIN): tests/data/nvidia/nv_kernels.cu
	@mkdir -p $(@D)
	$(NVCC) -cubin -arch=$(NV_ARCH) -O2 -o $@ $<
NV_CUBIN_DEP := $(NV_CUBIN)
endif

# the same kernels as a fatbin (cubin + PTX) and as PTX, for hsad run's tests
NV_FATBIN := $(NV_FIXDIR)/nv_kernels.fatbin
NV_PTX := $(NV_FIXDIR)/nv_kernels.ptx
NV_ARCH_NUM = $(patsubst sm_%,%,$(NV_ARCH))
ifneq ($(NVCC),)
$(NV_FATBIN): tests/data/nvidia/nv_kernels.cu
	@mkdir -p $(@D)
	$(NVCC) -fatbin -gencode arch=compute_$(NV_ARCH_NUM),code=[sm_$(NV_ARCH_NUM),compute_$(NV_ARCH_NUM)] -O2 -o $@ $<
$(NV_PTX): tests/data/nvidia/nv_kernels.cu
	@mkdir -p $(@D)
	$(NVCC) -ptx -arch=compute_$(NV_ARCH_NUM) -O2 -o $@ $<
NV_CUBIN_DEP += $(NV_FATBIN) $(NV_PTX)
endif

NV_TEST := $(TESTDIR)/test_nvidia
TEST_BINS += $(NV_TEST)
$(NV_TEST): tests/test_nvidia.c $(LIBDIR)/libhsad.a $(NV_CUBIN_DEP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DNV_CUBIN='"$(abspath $(NV_CUBIN))"' \
	  -DNV_DATADIR='"$(abspath tests/data/nvidia)"' $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lpthread -lm

# tests/test_nvidia_run.c: hsad run on the NVIDIA device (NVRTC source, cubin, fatbin, PTX)
NV_RUN_TEST := $(TESTDIR)/test_nvidia_run
TEST_BINS += $(NV_RUN_TEST)
NV_RUN_DEFS = -DHSAD_BIN='"$(abspath $(BINDIR))/hsad"' -DNV_DATADIR='"$(abspath tests/data/nvidia)"' \
  -DNV_CUBIN='"$(abspath $(NV_CUBIN))"' -DNV_FATBIN='"$(abspath $(NV_FATBIN))"' \
  -DNV_PTX='"$(abspath $(NV_PTX))"' -DNV_BENCH_BIN='"$(abspath $(BINDIR))/hsad-bench-nvidia"' \
  -DHSAD_SRCDIR='"$(CURDIR)"'
$(NV_RUN_TEST): tests/test_nvidia_run.c $(BINDIR)/hsad $(BINDIR)/hsad-bench-nvidia $(NV_CUBIN_DEP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(NV_RUN_DEFS) $< -o $@ $(LDFLAGS) -lcriterion -ljson-c

# hsad-bench-nvidia: hsad_kernel_dispatch against raw cuLaunchKernel (host ns per submit) and
# launch + wait against cuLaunchKernel + cuStreamSynchronize
NV_BENCH := $(BINDIR)/hsad-bench-nvidia
$(NV_BENCH): tests/bench_nvidia.c tests/bench_nvidia_graph.h tests/bench_nvidia_producers.h \
  tools/hsad/bench_threads.h tests/bench_nvidia_plot.h $(LIBDIR)/libhsad.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lpthread -lm
ALL_TARGETS += $(NV_BENCH)
endif
