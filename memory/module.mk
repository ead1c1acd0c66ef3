# memory: device/host allocations, registration, NUMA-aware pinned host pools (libhsad).
HSAD_LIB_SRCS += memory/state.c memory/alloc.c memory/host_pool.c
HSAD_LIB_LIBS += -lnuma
HEADERS += memory/hsad_memory.h

# ---- tests: tests/test_memory*.c, one Criterion binary each (the TSan program apart) ----
MEM_TESTS := $(patsubst tests/%.c,$(TESTDIR)/%,$(filter-out tests/test_memory_tsan.c,\
               $(wildcard tests/test_memory*.c)))
TEST_BINS += $(MEM_TESTS)

$(MEM_TESTS): $(TESTDIR)/%: tests/%.c tests/test_dispatch_util.h $(LIBDIR)/libhsad.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm
