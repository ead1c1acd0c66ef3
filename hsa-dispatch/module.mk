# hsa-dispatch: runtime, devices, programs, queues and the AQL dispatch path (libhsad).
HSAD_LIB_SRCS += hsa-dispatch/runtime.c hsa-dispatch/program.c hsa-dispatch/queue.c
HEADERS += hsa-dispatch/hsad.h hsa-dispatch/hsad_queue.h hsa-dispatch/hsad_aql.h

# ---- tests: tests/test_dispatch*.c, one Criterion binary each ----
DQ_FIXDIR   := $(TESTDIR)/dispatch
DQ_FIXTURES := $(DQ_FIXDIR)/limits-v5.hsaco
DQ_TESTS    := $(patsubst tests/%.c,$(TESTDIR)/%,$(wildcard tests/test_dispatch*.c))
TEST_BINS   += $(DQ_TESTS)

$(DQ_FIXDIR)/limits-v%.hsaco: tests/data/dispatch/limits-v%.s
	@mkdir -p $(@D)
	$(CLANG) -B/usr/lib/llvm-15/bin -x assembler -target amdgcn-amd-amdhsa -mcpu=gfx90a \
	  -mcode-object-version=$* $< -o $@

$(DQ_TESTS): $(TESTDIR)/%: tests/%.c tests/test_dispatch_util.h $(LIBDIR)/libhsad.a $(DQ_FIXTURES)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' -DDQ_FIXDIR='"$(abspath $(DQ_FIXDIR))"' \
	  $< -o $@ $(LDFLAGS) $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm
