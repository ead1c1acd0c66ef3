# codeobj: code objects (ELF, bundles, fat binaries), metadata, kernel descriptors, kernarg
# builder, occupancy, comgr compile. Linked into libhsad; tests and fixtures below.
HSAD_LIB_LIBS += -lz -lzstd
HSAD_LIB_SRCS += codeobj/argtype.c codeobj/arena.c codeobj/target.c codeobj/elf.c codeobj/metadata.c \
  codeobj/descriptor.c codeobj/kernarg.c codeobj/load.c codeobj/bundle.c \
  codeobj/occupancy.c codeobj/compile.c codeobj/clsource.c
# the umbrella header and one header per concept under it (issue 23)
CODEOBJ_HEADERS := codeobj/hsad_codeobj.h $(addprefix codeobj/hsad_codeobj_,$(addsuffix .h,\
  metadata target container load kernarg occupancy compile))
HEADERS += $(CODEOBJ_HEADERS)

# comgr 2.4 does not find clang's resource headers itself: hand it their folder, found now.
CO_RESOURCE_INC := $(shell $(CLANG) -print-resource-dir 2>/dev/null)/include
CO_DEVICE_LIBS := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/amdgcn/bitcode \
  /usr/lib/amdgcn/bitcode /opt/rocm/amdgcn/bitcode) /usr/lib/x86_64-linux-gnu/amdgcn/bitcode)
$(BUILD)/obj/codeobj/compile.o: CFLAGS += -DHSAD_CLANG_RESOURCE_INCLUDE='"$(CO_RESOURCE_INC)"' \
  -DHSAD_DEVICE_LIB_DIR='"$(CO_DEVICE_LIBS)"'

# ---- test fixtures: small kernels compiled here from tests/data/codeobj (never committed) ----
# clang-15's driver would call the system ld.lld (lld 14 on Debian 12, which rejects code object
# v5): -B points it at lld-15.
CO_FIXDIR := $(TESTDIR)/codeobj
CO_SRC    := tests/data/codeobj
CO_CLANG  := $(CLANG) -B/usr/lib/llvm-15/bin
CO_CL     := $(CO_CLANG) -x cl -Xclang -finclude-default-header -target amdgcn-amd-amdhsa \
             -nogpulib -O2
CO_PRESSURE_ISAS := gfx906 gfx908 gfx90a gfx940 gfx1030 gfx1100
# name: kernels-<mcpu with ':' as '_'>-v<version>.hsaco
CO_FIX_TARGETS := gfx90a-v5 gfx90a-v4 gfx90a-v3 gfx90a_xnack--v4 gfx90a_xnack+-v5 \
  gfx90a_sramecc+_xnack+-v5 \
  gfx906-v4 gfx906-v5 gfx908-v5 gfx940-v5 gfx1030-v5 gfx1030-v4 gfx1100-v5 gfx906-v2
CO_FIXTURES := $(CO_FIX_TARGETS:%=$(CO_FIXDIR)/kernels-%.hsaco) $(CO_FIXDIR)/hip_scale.bundle \
  $(CO_FIXDIR)/hip_scale.host.o $(CO_FIXDIR)/handwritten-v4.hsaco $(CO_FIXDIR)/handwritten-v5.hsaco \
  $(CO_FIXDIR)/hip_multi.so $(CO_FIXDIR)/partial-hidden-v5.hsaco $(CO_FIXDIR)/kernels-gfx90a.o \
  $(CO_FIXDIR)/env.bundle $(CO_FIXDIR)/xnack.bundle $(CO_FIXDIR)/hip_scale.ccob2 \
  $(CO_FIXDIR)/hip_scale.ccob3 $(CO_FIXDIR)/ccob_multi.o $(CO_FIXDIR)/hip_dup.o \
  $(CO_FIXDIR)/hip_scale-gfx90a.hsaco \
  $(CO_PRESSURE_ISAS:%=$(CO_FIXDIR)/pressure-%.hsaco) \
  $(CO_PRESSURE_ISAS:%=$(CO_FIXDIR)/pressure-spill-%.hsaco)

# register-pressure fixtures (issue 9): pressure.cl as is, and with a low VGPR budget given on the
# command line, the source unchanged (every __kernel gains amdgpu_num_vgpr(32)): hog spills
$(CO_FIXDIR)/pressure-%.hsaco: $(CO_SRC)/pressure.cl
	@mkdir -p $(@D)
	$(CO_CL) -mcpu=$* -mcode-object-version=5 $< -o $@
$(CO_FIXDIR)/pressure-spill-%.hsaco: $(CO_SRC)/pressure.cl
	@mkdir -p $(@D)
	$(CO_CL) -mcpu=$* -mcode-object-version=5 \
	  '-D__kernel=__kernel __attribute__((amdgpu_num_vgpr(32)))' $< -o $@

co_mcpu = $(subst _,:,$(word 1,$(subst -v, ,$(1))))
co_ver = $(lastword $(subst -v, ,$(1)))

$(CO_FIXDIR)/kernels-%.hsaco: $(CO_SRC)/kernels.cl
	@mkdir -p $(@D)
	$(CO_CL) -mcpu=$(call co_mcpu,$*) -mcode-object-version=$(call co_ver,$*) $< -o $@

$(CO_FIXDIR)/handwritten-v%.hsaco: $(CO_SRC)/handwritten-v%.s
	@mkdir -p $(@D)
	$(CO_CLANG) -x assembler -target amdgcn-amd-amdhsa -mcpu=gfx90a -mcode-object-version=$* $< -o $@

$(CO_FIXDIR)/partial-hidden-v5.hsaco: $(CO_SRC)/partial-hidden-v5.s
	@mkdir -p $(@D)
	$(CO_CLANG) -x assembler -target amdgcn-amd-amdhsa -mcpu=gfx90a -mcode-object-version=5 $< -o $@

# a relocatable object (clang -c, not linked): refused with advice to link it
$(CO_FIXDIR)/kernels-gfx90a.o: $(CO_SRC)/kernels.cl
	@mkdir -p $(@D)
	$(CO_CL) -mcpu=gfx90a -mcode-object-version=5 -c $< -o $@

$(CO_FIXDIR)/hip_scale.bundle: $(CO_SRC)/hip_scale.hip
	@mkdir -p $(@D)
	$(CO_CLANG) -x hip --cuda-device-only --offload-arch=gfx90a:xnack- --offload-arch=gfx1030 \
	  -nogpulib -nogpuinc -O2 $< -o $@

$(CO_FIXDIR)/hip_scale.host.o: $(CO_SRC)/hip_scale.hip
	@mkdir -p $(@D)
	$(CO_CLANG) -x hip --offload-arch=gfx90a --offload-arch=gfx906 -nogpulib -nogpuinc -O2 \
	  -c $< -o $@

# a shared library whose .hip_fatbin holds two bundles (one per translation unit)
$(CO_FIXDIR)/hip_multi.so: $(CO_SRC)/hip_scale.hip $(CO_SRC)/hip_second.hip
	@mkdir -p $(@D)
	$(CO_CLANG) -x hip --offload-arch=gfx90a --offload-arch=gfx906 -nogpulib -nogpuinc -O2 \
	  -fPIC -shared $^ -o $@

# ---- containers written by tests/data/codeobj/mkcontainer.py (issue 10) ----
CO_MK := python3 $(CO_SRC)/mkcontainer.py
# entry ids with an environment word ("-unknown-"), entries at unaligned offsets (5-byte gaps)
$(CO_FIXDIR)/env.bundle: $(CO_SRC)/mkcontainer.py $(CO_FIXDIR)/kernels-gfx1030-v5.hsaco \
    $(CO_FIXDIR)/kernels-gfx90a-v5.hsaco
	$(CO_MK) bundle $@ --gap 5 hipv4-amdgcn-amd-amdhsa-unknown-gfx1030=$(word 2,$^) \
	  hipv4-amdgcn-amd-amdhsa-unknown-gfx90a=$(word 3,$^)
# xnack+ first, so picking the first compatible entry would be wrong for an xnack-off device
$(CO_FIXDIR)/xnack.bundle: $(CO_SRC)/mkcontainer.py $(CO_FIXDIR)/kernels-gfx90a_xnack+-v5.hsaco \
    $(CO_FIXDIR)/kernels-gfx90a_xnack--v4.hsaco
	$(CO_MK) bundle $@ hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+=$(word 2,$^) \
	  hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-=$(word 3,$^)
$(CO_FIXDIR)/hip_scale.ccob2: $(CO_SRC)/mkcontainer.py $(CO_FIXDIR)/hip_scale.bundle
	$(CO_MK) ccob $@ 2 zlib $(word 2,$^)
$(CO_FIXDIR)/hip_scale.ccob3: $(CO_SRC)/mkcontainer.py $(CO_FIXDIR)/hip_scale.bundle
	$(CO_MK) ccob $@ 3 zstd $(word 2,$^)
$(CO_FIXDIR)/hip_%-gfx90a.hsaco: $(CO_SRC)/hip_%.hip
	@mkdir -p $(@D)
	$(CO_CLANG) -x hip --cuda-device-only --no-gpu-bundle-output --offload-arch=gfx90a \
	  -nogpulib -nogpuinc -O2 $< -o $@
# A host object whose .hip_fatbin holds three bundles (one per translation unit), 4096-aligned:
# CCOB v2 zlib, stored (level 0) so a host entry's decoy bytes ("CCOB", the bundle magic) lie
# in the section as they are; CCOB v3 zstd; a plain bundle with an environment word.
$(CO_FIXDIR)/ccob_multi.o: $(CO_SRC)/mkcontainer.py $(CO_FIXDIR)/kernels-gfx90a-v5.hsaco \
    $(CO_FIXDIR)/hip_second-gfx90a.hsaco $(CO_FIXDIR)/partial-hidden-v5.hsaco
	$(CO_MK) decoy $@.decoy
	$(CO_MK) bundle $@.b0 host-x86_64-unknown-linux-gnu-=$@.decoy \
	  hipv4-amdgcn-amd-amdhsa--gfx90a=$(word 2,$^)
	$(CO_MK) ccob $@.z0 2 zlib0 $@.b0
	$(CO_MK) bundle $@.b1 host-x86_64-unknown-linux-gnu-=$@.decoy \
	  hipv4-amdgcn-amd-amdhsa--gfx90a=$(word 3,$^)
	$(CO_MK) ccob $@.z1 3 zstd $@.b1
	$(CO_MK) bundle $@.b2 hipv4-amdgcn-amd-amdhsa-unknown-gfx90a=$(word 4,$^)
	$(CO_MK) host $@ $@.z0 $@.z1 $@.b2
	@rm -f $@.decoy $@.b0 $@.b1 $@.b2 $@.z0 $@.z1

# two translation units defining the same kernel (hip_scale.hip twice): a program load error
$(CO_FIXDIR)/hip_dup.o: $(CO_SRC)/mkcontainer.py $(CO_FIXDIR)/hip_scale-gfx90a.hsaco
	$(CO_MK) bundle $@.b hipv4-amdgcn-amd-amdhsa--gfx90a=$(word 2,$^)
	$(CO_MK) host $@ $@.b $@.b
	@rm -f $@.b

# ---- Criterion tests ----
CO_TESTS := $(patsubst tests/%.c,$(TESTDIR)/%,$(wildcard tests/test_codeobj_*.c))
TEST_BINS += $(CO_TESTS)

$(TESTDIR)/test_codeobj_%: tests/test_codeobj_%.c tests/test_codeobj_util.h \
    $(LIBDIR)/libhsad.a $(CO_FIXTURES)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DCO_FIXDIR='"$(abspath $(CO_FIXDIR))"' -DCO_KERNDIR='"$(abspath $(KERNDIR))"' \
	  -DCO_SRCDIR='"$(abspath $(CO_SRC))"' -DCO_HSAD='"$(abspath $(BINDIR)/hsad)"' $< \
	  $(CO_EXTRA_OBJS_$(@F)) -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm

# test_codeobj_program carries the twin of a second-unit kernel (kfd-emu finds it by dlsym)
$(TESTDIR)/test_codeobj_program: LDFLAGS += -rdynamic

# The public header compiled as C++ (g++ -pedantic), linked into the target test.
CXX ?= g++
$(TESTDIR)/codeobj_cxx.o: tests/codeobj_cxx.cpp $(CODEOBJ_HEADERS) common/hsad_status.h
	@mkdir -p $(@D)
	$(CXX) -std=c++11 -Wall -Wextra -pedantic -Werror -fno-exceptions -fPIC -I. $(SAN) -c $< -o $@
CO_EXTRA_OBJS_test_codeobj_target := $(TESTDIR)/codeobj_cxx.o
$(TESTDIR)/test_codeobj_target: $(TESTDIR)/codeobj_cxx.o

# The llvm-readelf cross-check also reads every code object kernels/ builds.
$(TESTDIR)/test_codeobj_readelf: | kernels $(BINDIR)/hsad
# The fuzz test corrupts every gfx90a code object kernels/ builds.
$(TESTDIR)/test_codeobj_fuzz: | kernels
$(TESTDIR)/test_codeobj_cli: | $(BINDIR)/hsad

# Speed figures of issue 3 (load, hsad inspect end to end, lookup): a benchmark, not a test,
# since timings on shared machines are noise; `make bench-codeobj` runs it.
$(TESTDIR)/bench_codeobj: tests/bench_codeobj.c tests/test_codeobj_util.h $(LIBDIR)/libhsad.a \
    | $(BINDIR)/hsad
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DCO_FIXDIR='"$(abspath $(CO_FIXDIR))"' -DCO_KERNDIR='"$(abspath $(KERNDIR))"' \
	  -DCO_HSAD='"$(abspath $(BINDIR)/hsad)"' $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm

.PHONY: bench-codeobj
bench-codeobj: $(TESTDIR)/bench_codeobj
	$(TESTDIR)/bench_codeobj --verbose

.PHONY: codeobj-fixtures
codeobj-fixtures: $(CO_FIXTURES)

# ---- libFuzzer: `make fuzz` (FUZZ_TIME seconds, default 600) over the loader and metadata ----
# The seed corpus is made from the real code objects the build produces (never committed);
# libFuzzer adds what it finds to $(BUILD)/fuzz/corpus, findings land in $(BUILD)/fuzz/.
FUZZ_TIME ?= 600
CO_FUZZ_SRCS := codeobj/argtype.c codeobj/arena.c codeobj/target.c codeobj/elf.c codeobj/metadata.c \
  codeobj/descriptor.c codeobj/kernarg.c codeobj/load.c codeobj/bundle.c codeobj/occupancy.c \
  common/status.c common/null_args.c codeobj/fuzz/fuzz_codeobj.c
CO_FUZZ_BIN := $(BUILD)/fuzz/fuzz_codeobj

$(CO_FUZZ_BIN): $(CO_FUZZ_SRCS) $(CODEOBJ_HEADERS) codeobj/codeobj_internal.h
	@mkdir -p $(@D)
	$(CLANG) -std=gnu11 -g -O1 -I. -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined $(CO_FUZZ_SRCS) -o $@ -lelf -lmsgpackc -lz -lzstd -lpthread

.PHONY: codeobj-fuzz
fuzz: codeobj-fuzz
codeobj-fuzz: $(CO_FUZZ_BIN) $(CO_FIXTURES) | kernels
	@mkdir -p $(BUILD)/fuzz/corpus $(BUILD)/fuzz/seed
	cp $(CO_FIXTURES) $(wildcard $(KERNDIR)/*-v5.hsaco) $(BUILD)/fuzz/seed/
	cd $(BUILD)/fuzz && ./fuzz_codeobj -max_total_time=$(FUZZ_TIME) \
	  -max_len=65536 -timeout=10 -rss_limit_mb=4096 corpus seed
