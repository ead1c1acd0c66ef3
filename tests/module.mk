# tests/: Criterion tests of kfd-emu under the real ROCr (plain ROCr calls, no hsa-dispatch).
EMU_TEST := $(TESTDIR)/test_emu
$(EMU_TEST): tests/test_emu.c tests/rocr_testutil.c tests/rocr_testutil.h $(ALL_TARGETS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(KERNDIR)"' -o $@ tests/test_emu.c tests/rocr_testutil.c \
	  $(LDFLAGS) -lcriterion -lhsa-runtime64
TEST_BINS += $(EMU_TEST)
