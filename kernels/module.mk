# kernels/: OpenCL C test kernels built to AMDGPU code objects, their host twins for kfd-emu,
# and a HIP vector add built with hipcc.
#
#   $(KERNDIR)/<name>-<gfx>-v<N>.hsaco   one code object per source file, target and code object
#                                        version (every kernel of <name>.cl is in it)
#   $(EMUDIR)/libkfd-emu-twins.so        twins of every kernel here and of HIP's (ROCclr's) blit
#                                        kernels; kfd-emu dlopens it
#   $(BINDIR)/hip-vector-add             HIP program that checks its own result (exit 0/1)
#
# clang-15 compiles and links the device libraries (--rocm-device-lib-path); the link is done
# with ld.lld-15 directly because clang-15's driver calls plain `ld.lld`, which on Debian 12 is
# lld-14 and rejects code object v5 ("unknown abi version").

KERN_NAMES    := vector_add saxpy fill empty order_record count_dispatch lds_reduce big_private \
                 big_args
KERN_GFX      ?= gfx906 gfx908 gfx90a gfx940 gfx1030
KERN_COV      ?= 4 5
KERN_LLD      ?= ld.lld-15
KERN_BITCODE  ?= /usr/lib/x86_64-linux-gnu/amdgcn/bitcode
KERN_CLFLAGS  := -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -O2 -Xclang -finclude-default-header \
                 --rocm-device-lib-path=$(KERN_BITCODE)

KERN_HSACOS := $(foreach n,$(KERN_NAMES),$(foreach g,$(KERN_GFX),$(foreach v,$(KERN_COV),\
                 $(KERNDIR)/$(n)-$(g)-v$(v).hsaco)))

# $(KERNDIR)/NAME.carried.cl: the source with the copy it carries into its code objects
# (kernels/carry_source.py), so kfd-emu runs them from source through POCL.
$(KERNDIR)/%.carried.cl: kernels/%.cl kernels/carry_source.py
	@mkdir -p $(@D)
	python3 kernels/carry_source.py $< $@

# $(KERNDIR)/NAME-GFX-vN.hsaco from kernels/NAME.cl (carrying its source).
define KERN_RULE
$(KERNDIR)/$(1)-$(2)-v$(3).hsaco: $(KERNDIR)/$(1).carried.cl kernels/module.mk
	@mkdir -p $$(@D)
	$$(CLANG) $$(KERN_CLFLAGS) -mcpu=$(2) -mcode-object-version=$(3) -c $$< -o $$@.o
	$$(KERN_LLD) -shared $$@.o -o $$@
	@rm -f $$@.o
endef
$(foreach n,$(KERN_NAMES),$(foreach g,$(KERN_GFX),$(foreach v,$(KERN_COV),\
  $(eval $(call KERN_RULE,$(n),$(g),$(v))))))

# Twins: kfd-emu looks up kfd_emu_twin_<kernel> with dlsym in this library.
KERN_TWIN_SRCS := kernels/twins.c kernels/twins_rocclr.c
KERN_TWIN_OBJS := $(KERN_TWIN_SRCS:%.c=$(BUILD)/obj/%.o)
$(EMUDIR)/libkfd-emu-twins.so: $(KERN_TWIN_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -o $@ $^ -lm

# HIP vector add: hipcc for gfx90a (the device kfd-emu emulates by default).
HIPCC          ?= hipcc
KERN_HIP_ARCH  ?= gfx90a
$(BINDIR)/hip-vector-add: kernels/hip/vector_add.hip kernels/module.mk
	@mkdir -p $(@D)
	$(HIPCC) --offload-arch=$(KERN_HIP_ARCH) -O2 -o $@ $<

.PHONY: kernels
kernels: $(KERN_HSACOS) $(EMUDIR)/libkfd-emu-twins.so $(BINDIR)/hip-vector-add

ALL_TARGETS += $(KERN_HSACOS) $(EMUDIR)/libkfd-emu-twins.so $(BINDIR)/hip-vector-add

# Tests: kernels/ through plain ROCr on kfd-emu (scripts/run-tests.sh sets the library path).
KERN_TEST := $(TESTDIR)/test_kernels
$(KERN_TEST): tests/test_kernels.c $(KERN_HSACOS) $(EMUDIR)/libkfd-emu-twins.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' -o $@ $< $(LDFLAGS) \
	  -lcriterion -lhsa-runtime64 -lm
TEST_BINS += $(KERN_TEST)

# HIP on kfd-emu: the hipcc vector add and hipMemcpy/hipMemset through ROCclr's blit kernels.
KERN_HIP_TEST := $(TESTDIR)/test_kernels_hip
$(KERN_HIP_TEST): tests/test_kernels_hip.c $(BINDIR)/hip-vector-add $(EMUDIR)/libkfd-emu-twins.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_HIP_VECTOR_ADD='"$(abspath $(BINDIR)/hip-vector-add)"' -o $@ $< \
	  $(LDFLAGS) -lcriterion -lamdhip64
TEST_BINS += $(KERN_HIP_TEST)

# The twins alone (no ROCr): ROCr blit identification and semantics, ROCclr blits, arg checks.
KERN_TWIN_TEST := $(TESTDIR)/test_kernels_twins
$(KERN_TWIN_TEST): tests/test_kernels_twins.c $(KERN_TWIN_OBJS) $(BUILD)/obj/tools/kfd-emu/blit_rocr.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) -lcriterion -lm
TEST_BINS += $(KERN_TWIN_TEST)

# Source mode (issue 20): users' own kernels through hsad run on kfd-emu, run from source (POCL).
KERN_SRC_TEST := $(TESTDIR)/test_kfd_emu_source
# scale3 (tests/data/pocl/foreign_scale.cl, its helper from -I inc/) built by clang alone: a code
# object from elsewhere, carrying no source (hsad run --source gives it)
KERN_FOREIGN_HSACO := $(TESTDIR)/data/foreign_scale-gfx90a.hsaco
$(KERN_FOREIGN_HSACO): tests/data/pocl/foreign_scale.cl tests/data/pocl/inc/scale_op.h \
  tests/data/pocl/inc/scale_bias.h
	@mkdir -p $(@D)
	$(CLANG) $(KERN_CLFLAGS) -Itests/data/pocl/inc -mcpu=gfx90a -mcode-object-version=5 -c $< \
	  -o $@.o
	$(KERN_LLD) -shared $@.o -o $@
	@rm -f $@.o
$(KERN_SRC_TEST): tests/test_kfd_emu_source.c $(BINDIR)/hsad $(EMUDIR)/libhsakmt.so.1 $(KERN_HSACOS) \
  $(EMUDIR)/libkfd-emu-twins.so $(KERN_FOREIGN_HSACO)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_HSAD='"$(abspath $(BINDIR)/hsad)"' \
	  -DTEST_DATA='"$(abspath tests/data/pocl)"' -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' \
	  -DTEST_FOREIGN='"$(abspath $(KERN_FOREIGN_HSACO))"' -o $@ $< $(LDFLAGS) -lcriterion -lm
TEST_BINS += $(KERN_SRC_TEST)
