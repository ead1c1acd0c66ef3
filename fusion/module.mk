# fusion: kernel graphs launched as one AQL submission per queue (libhsad; uses hsa-dispatch).
HSAD_LIB_SRCS += fusion/graph.c
HEADERS += fusion/hsad_fusion.h

FU_TEST := $(TESTDIR)/test_fusion
TEST_BINS += $(FU_TEST)
$(FU_TEST): tests/test_fusion.c tests/test_dispatch_util.h $(LIBDIR)/libhsad.a $(BINDIR)/hsad
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' -DHSAD_BIN='"$(abspath $(BINDIR))/hsad"' \
	  -DHSAD_SRCDIR='"$(CURDIR)"' $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm
