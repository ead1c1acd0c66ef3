# hsa-dispatch: runtime, devices, programs, queues and the AQL dispatch path (libhsad).
HSAD_LIB_SRCS += hsa-dispatch/runtime.c hsa-dispatch/program.c hsa-dispatch/queue.c hsa-dispatch/rocr.c \
  hsa-dispatch/timeline.c hsa-dispatch/dispatch.c hsa-dispatch/launch_check.c hsa-dispatch/submit.c \
  hsa-dispatch/aql_ring.c hsa-dispatch/launch_cache.c hsa-dispatch/batch.c hsa-dispatch/gate.c \
  hsa-dispatch/monitor.c hsa-dispatch/monitor_common.c hsa-dispatch/trace.c hsa-dispatch/variants.c hsa-dispatch/backend.c
HEADERS += hsa-dispatch/hsad.h hsa-dispatch/hsad_vendor.h hsa-dispatch/hsad_queue.h hsa-dispatch/hsad_aql.h hsa-dispatch/hsad_rocr.h hsa-dispatch/hsad_submit.h \
  hsa-dispatch/hsad_emu_abi.h hsa-dispatch/hsad_monitor.h hsa-dispatch/hsad_variants.h
# trace export (trace.c) writes JSON with json-c
HSAD_LIB_LIBS += -ljson-c

# ---- tests: tests/test_dispatch*.c, one Criterion binary each ----
DQ_FIXDIR   := $(TESTDIR)/dispatch
DQ_FIXTURES := $(DQ_FIXDIR)/limits-v5.hsaco
DQ_TESTS    := $(patsubst tests/%.c,$(TESTDIR)/%,$(filter-out tests/test_dispatch_tsan.c,\
                 $(wildcard tests/test_dispatch*.c)))
TEST_BINS   += $(DQ_TESTS)

$(DQ_FIXDIR)/limits-v%.hsaco: tests/data/dispatch/limits-v%.s
	@mkdir -p $(@D)
	$(CLANG) -B/usr/lib/llvm-15/bin -x assembler -target amdgcn-amd-amdhsa -mcpu=gfx90a \
	  -mcode-object-version=$* $< -o $@

# fill.cl for single gfx90a target IDs (xnack+ alone, sramecc- alone, and the device's own
# sramecc+:xnack-): the ISA checks of tests/test_dispatch_public.c. fill-<mcpu, ':' as '_'>.hsaco
DQ_ISA_FIXTURES := $(DQ_FIXDIR)/fill-gfx90a_xnack+.hsaco $(DQ_FIXDIR)/fill-gfx90a_sramecc-.hsaco \
  $(DQ_FIXDIR)/fill-gfx90a_sramecc+_xnack-.hsaco
$(DQ_FIXDIR)/fill-%.hsaco: kernels/fill.cl
	@mkdir -p $(@D)
	$(CLANG) $(KERN_CLFLAGS) -mcpu=$(subst _,:,$*) -mcode-object-version=5 -c $< -o $@.o
	$(KERN_LLD) -shared $@.o -o $@
	@rm -f $@.o
# a twin of 'empty' whose workgroups sleep 2 s: one kfd-emu cannot preempt (test_dispatch_public)
DQ_SLOW_TWIN := $(DQ_FIXDIR)/libslow_twin.so
$(DQ_SLOW_TWIN): tests/data/dispatch/slow_twin.c tools/kfd-emu/kfd_emu_twin.h
	@mkdir -p $(@D)
	$(CC) $(filter-out -fsanitize%,$(CFLAGS)) -shared -fPIC $< -o $@
$(TESTDIR)/test_dispatch_public: $(DQ_ISA_FIXTURES) $(DQ_SLOW_TWIN)

$(DQ_TESTS): $(TESTDIR)/%: tests/%.c tests/test_dispatch_util.h tests/test_dispatch_exact.h $(LIBDIR)/libhsad.a $(DQ_FIXTURES)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' -DTH_FIXDIR='"$(abspath $(DQ_FIXDIR))"' \
	  -DHSAD_BIN='"$(abspath $(BINDIR))/hsad"' -DHSAD_SRCDIR='"$(CURDIR)"' \
	  $< -o $@ $(LDFLAGS) $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm

# the ring object on host memory: aql_ring.c alone, no ROCr, no kfd-emu (milliseconds)
RING_TEST := $(TESTDIR)/test_aql_ring
TEST_BINS += $(RING_TEST)
$(RING_TEST): tests/test_aql_ring.c hsa-dispatch/aql_ring.c hsa-dispatch/aql_ring.h hsa-dispatch/hsad_aql.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) tests/test_aql_ring.c hsa-dispatch/aql_ring.c -o $@ $(LDFLAGS) -lcriterion

# the CLI test runs the hsad executable
$(TESTDIR)/test_dispatch_cli: $(BINDIR)/hsad

# ---- ThreadSanitizer: the multi-producer scenario as a plain program (Criterion does not start
# under TSan), in its own build tree with kfd-emu instrumented too (the CP's release of the read
# index is what orders one producer's slot writes before the next producer's); the kernels and
# twins come from the normal build. ROCr's own blit of a code object loaded while a CP thread
# runs (the second program) is invisible to TSan (ROCr is not instrumented): the blit frames
# are suppressed as for memory-tsan (tests/tsan-memory.supp), nothing else. Kernels run as
# their twins (KFD_EMU_KERNEL_MODE=twin): POCL, which runs a kernel from its own source, loads
# an uninstrumented LLVM that crashed in dlopen under TSan (stop 27); the twins are the same
# kernels' host code, so the ring and completion traffic TSan watches is the same.
DQ_TSAN_BUILD ?= build-tsan
$(BUILD)/tsan/test_dispatch_tsan: tests/test_dispatch_tsan.c $(LIBDIR)/libhsad.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lm

.PHONY: dispatch-tsan
dispatch-tsan: all
	@$(MAKE) --no-print-directory BUILD=$(DQ_TSAN_BUILD) SAN=-fsanitize=thread \
	  KERNDIR=$(abspath $(KERNDIR)) $(DQ_TSAN_BUILD)/tsan/test_dispatch_tsan \
	  $(DQ_TSAN_BUILD)/lib/hsad/kfd-emu/libhsakmt.so.1
	LD_LIBRARY_PATH=$(DQ_TSAN_BUILD)/lib/hsad/kfd-emu \
	  KFD_EMU_TWINS=$(abspath $(EMUDIR))/libkfd-emu-twins.so KFD_EMU_KERNEL_MODE=twin \
	  TSAN_OPTIONS="suppressions=$(abspath tests/tsan-memory.supp) $(TSAN_OPTIONS)" \
	  $(DQ_TSAN_BUILD)/tsan/test_dispatch_tsan $(DQ_TSAN_COUNT)

# ---- tests/test_monitor.c: monitoring records, alerts and trace export ----
MON_FIXTURE := $(TESTDIR)/monitor/monitor-v5.hsaco
MON_TEST    := $(TESTDIR)/test_monitor
TEST_BINS   += $(MON_TEST)
$(MON_FIXTURE): tests/data/monitor/monitor.s
	@mkdir -p $(@D)
	$(CLANG) -B/usr/lib/llvm-15/bin -x assembler -target amdgcn-amd-amdhsa -mcpu=gfx90a \
	  -mcode-object-version=5 $< -o $@
# kfd-emu and its twins too: the emu_* tests check how kfd-emu runs fill (source or twin), and
# make mutation builds only the test binaries (tests/mutation/33 patches kfd-emu)
$(MON_TEST): tests/test_monitor.c tests/test_dispatch_util.h $(LIBDIR)/libhsad.a $(MON_FIXTURE) \
  $(KERNDIR)/fill-gfx90a-v5.hsaco $(EMUDIR)/libhsakmt.so.1 $(EMUDIR)/libkfd-emu-twins.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DMON_FIXTURE='"$(abspath $(MON_FIXTURE))"' \
	  -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm

# ---- tests/test_budget.c: the dispatch path's instruction budget (callgrind) through the shared
# libhsad.so, as users link it: tests/budget_dispatch.c linked to $(LIBDIR)/libhsad.so (found as
# libhsad.so.0 beside it), committed counts in tests/data/dispatch_budget.txt ----
BUDGET_DIR := $(TESTDIR)/budget
BUDGET_BIN := $(BUDGET_DIR)/budget_dispatch
$(BUDGET_DIR)/libhsad.so.0: $(LIBDIR)/libhsad.so
	@mkdir -p $(@D)
	ln -sf $(abspath $<) $@
$(BUDGET_BIN): tests/budget_dispatch.c $(LIBDIR)/libhsad.so $(BUDGET_DIR)/libhsad.so.0
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' $< -o $@ $(LDFLAGS) \
	  -L$(LIBDIR) -lhsad -Wl,-rpath,'$$ORIGIN'
BUDGET_TEST := $(TESTDIR)/test_budget
TEST_BINS += $(BUDGET_TEST)
$(BUDGET_TEST): tests/test_budget.c $(BUDGET_BIN) tests/data/dispatch_budget.txt
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DBUDGET_BIN='"$(abspath $(BUDGET_BIN))"' -DHSAD_SRCDIR='"$(CURDIR)"' $< -o $@ \
	  $(LDFLAGS) -lcriterion

# test_dispatch_fuzz also dispatches kernels of codeobj/'s fixtures (odd kernarg layouts)
$(TESTDIR)/test_dispatch_fuzz: private CFLAGS += -DCO_FIXDIR='"$(abspath $(CO_FIXDIR))"'
$(TESTDIR)/test_dispatch_fuzz: $(CO_FIXDIR)/kernels-gfx90a-v5.hsaco $(CO_FIXDIR)/handwritten-v5.hsaco \
  $(CO_FIXDIR)/partial-hidden-v5.hsaco
