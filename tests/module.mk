# tests/: Criterion tests of kfd-emu under the real ROCr (plain ROCr calls, no hsa-dispatch).
EMU_TEST := $(TESTDIR)/test_emu
$(EMU_TEST): tests/test_emu.c tests/rocr_testutil.c tests/rocr_testutil.h $(ALL_TARGETS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(KERNDIR)"' -o $@ tests/test_emu.c tests/rocr_testutil.c \
	  $(LDFLAGS) -rdynamic -lcriterion -lhsa-runtime64
TEST_BINS += $(EMU_TEST)
# kfd-emu's module.mk comes later (ALL_TARGETS above lacks it): name the library by its path.
$(EMU_TEST): $(EMUDIR)/libhsakmt.so.1

# A kernel without a twin, for kfd-emu's no-twin error and noop mode.
EMU_TEST_HSACO := $(TESTDIR)/data/no_twin-gfx90a.hsaco
$(EMU_TEST_HSACO): tests/data/emu/no_twin.cl
	@mkdir -p $(@D)
	$(CLANG) $(KERN_CLFLAGS) -mcpu=gfx90a -mcode-object-version=4 -c $< -o $@.o
	$(KERN_LLD) -shared $@.o -o $@
	@rm -f $@.o
$(EMU_TEST): $(EMU_TEST_HSACO)

# Kernels whose twins live in test_emu itself (a gate the test opens, faulting twins).
EMU_TEST_KERNELS := $(TESTDIR)/data/emu_test-gfx90a.hsaco
$(EMU_TEST_KERNELS): tests/data/emu/emu_test.cl
	@mkdir -p $(@D)
	$(CLANG) $(KERN_CLFLAGS) -mcpu=gfx90a -mcode-object-version=4 -c $< -o $@.o
	$(KERN_LLD) -shared $@.o -o $@
	@rm -f $@.o
$(EMU_TEST): $(EMU_TEST_KERNELS)

# ThreadSanitizer run of kfd-emu driven from several host threads (Criterion's process arena
# does not start under TSan, so this is a plain program). Own build tree: build-tsan/.
TSAN_BUILD ?= build-tsan
$(BUILD)/tsan/stress_emu: tests/stress_emu.c tests/rocr_testutil.c tests/rocr_testutil.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ tests/stress_emu.c tests/rocr_testutil.c $(LDFLAGS) -lhsa-runtime64 -lpthread

.PHONY: tsan
tsan: deps
	@$(MAKE) --no-print-directory BUILD=$(TSAN_BUILD) SAN=-fsanitize=thread \
	  $(TSAN_BUILD)/lib/hsad/kfd-emu/libhsakmt.so.1 $(TSAN_BUILD)/tsan/stress_emu
	KFD_EMU_GPUS=2 LD_LIBRARY_PATH=$(TSAN_BUILD)/lib/hsad/kfd-emu $(TSAN_BUILD)/tsan/stress_emu

# memcheck over kfd-emu driven through ROCr (the plain stress program, fewer packets).
.PHONY: valgrind
valgrind: deps
	@$(MAKE) --no-print-directory $(KFD_EMU_LIB) $(BUILD)/tsan/stress_emu
	STRESS_PACKETS=500 KFD_EMU_GPUS=2 LD_LIBRARY_PATH=$(EMUDIR) valgrind -q --error-exitcode=9 \
	  --suppressions=tests/valgrind.supp $(BUILD)/tsan/stress_emu

# The mutation check's patches still apply to the tree and cover the submit contract's steps
# (git apply --check only: no mutant is built here; `make mutation` runs them).
MUT_TEST := $(TESTDIR)/test_mutation_patches
TEST_BINS += $(MUT_TEST)
$(MUT_TEST): tests/test_mutation_patches.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DHSAD_SRCDIR='"$(CURDIR)"' $< -o $@ $(LDFLAGS) -lcriterion

# Tests that kill survivors of make mutation-sample (issue 18: tests/mutation-sample/REPORT.md
# names each one), in their own binary so that the areas' test files stay their owners'.
SURV_TEST := $(TESTDIR)/test_survivors
TEST_BINS += $(SURV_TEST)
$(SURV_TEST): tests/test_survivors.c tests/test_dispatch_util.h $(LIBDIR)/libhsad.a $(DQ_FIXTURES) \
    $(CO_FIXDIR)/kernels-gfx90a-v5.hsaco $(CO_FIXDIR)/hip_multi.so \
    $(CO_FIXDIR)/hip_dup.o $(MON_FIXTURE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' -DTH_FIXDIR='"$(abspath $(DQ_FIXDIR))"' \
	  -DCO_FIXDIR='"$(abspath $(CO_FIXDIR))"' -DMON_FIXTURE='"$(abspath $(MON_FIXTURE))"' \
	  $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm
