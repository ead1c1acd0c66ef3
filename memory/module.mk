# memory: device/host allocations, registration, NUMA-aware pinned host pools (libhsad).
HSAD_LIB_SRCS += memory/state.c memory/alloc.c memory/host_pool.c memory/copy.c memory/copy_async.c memory/copy_rect.c memory/rect_blit.c memory/grant.c \
  memory/stream_pool.c
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

# ---- ThreadSanitizer: 4 threads allocating, copying (every strategy), filling and freeing at
# once, as a plain program (Criterion does not start under TSan), in its own build tree with
# kfd-emu instrumented too; kernels and twins come from the normal build.
MEM_TSAN_BUILD ?= build-tsan
$(BUILD)/tsan/test_memory_tsan: tests/test_memory_tsan.c $(LIBDIR)/libhsad.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lm

.PHONY: memory-tsan
memory-tsan: all
	@$(MAKE) --no-print-directory BUILD=$(MEM_TSAN_BUILD) SAN=-fsanitize=thread \
	  KERNDIR=$(abspath $(KERNDIR)) $(MEM_TSAN_BUILD)/tsan/test_memory_tsan \
	  $(MEM_TSAN_BUILD)/lib/hsad/kfd-emu/libhsakmt.so.1
	LD_LIBRARY_PATH=$(MEM_TSAN_BUILD)/lib/hsad/kfd-emu \
	  KFD_EMU_TWINS=$(abspath $(EMUDIR))/libkfd-emu-twins.so KFD_EMU_KERNEL_MODE=twin \
	  TSAN_OPTIONS="suppressions=$(abspath tests/tsan-memory.supp) $(TSAN_OPTIONS)" \
	  $(MEM_TSAN_BUILD)/tsan/test_memory_tsan $(MEM_TSAN_ROUNDS)

# the 2-D/3-D copy kernel's source is built into the library (memory/rect_blit.c, .incbin)
$(BUILD)/obj/memory/rect_blit.o: kernels/copy_rect.cl
# ... and built at build time too, like kernels/'s (every KERN_GFX x KERN_COV, carrying its
# source: $(KERNDIR)/copy_rect-GFX-vN.hsaco), so a source that fails for one target fails make
$(foreach g,$(KERN_GFX),$(foreach v,$(KERN_COV),$(eval $(call KERN_RULE,copy_rect,$(g),$(v)))))
ALL_TARGETS += $(foreach g,$(KERN_GFX),$(foreach v,$(KERN_COV),$(KERNDIR)/copy_rect-$(g)-v$(v).hsaco))

# the 2-D copy paths side by side (not a test: README's figures)
$(TESTDIR)/bench_memory_rect: tests/bench_memory_rect.c $(LIBDIR)/libhsad.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lm
