# fusion: kernel graphs launched as one AQL submission per queue (libhsad; uses hsa-dispatch).
HSAD_LIB_SRCS += fusion/graph.c fusion/exec.c fusion/launch.c fusion/blit.c fusion/capture.c
HEADERS += fusion/hsad_fusion.h

FU_TEST := $(TESTDIR)/test_fusion
TEST_BINS += $(FU_TEST)
$(FU_TEST): tests/test_fusion.c tests/test_dispatch_util.h $(LIBDIR)/libhsad.a $(BINDIR)/hsad
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' -DHSAD_BIN='"$(abspath $(BINDIR))/hsad"' \
	  -DHSAD_SRCDIR='"$(CURDIR)"' -DFU_TWINS='"$(abspath $(FU_TWINS))"' $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm
# twins of tests/data/cli/mangled.hip's C++ kernels (KFD_EMU_TWINS) for hsad graph's names
FU_TWINS := $(TESTDIR)/data/libmangled-twins.so
$(FU_TWINS): tests/data/cli/mangled_twins.c tools/kfd-emu/kfd_emu_twin.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -shared $< -o $@ $(LDFLAGS)
$(FU_TEST): $(FU_TWINS)

# graph ordering: stream order, epoch points, launch dependencies (libhsad only: no CLI)
FU_ORDER_TEST := $(TESTDIR)/test_fusion_order
TEST_BINS += $(FU_ORDER_TEST)
$(FU_ORDER_TEST): tests/test_fusion_order.c tests/test_dispatch_util.h $(LIBDIR)/libhsad.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm

# stream capture: submits to a capturing queue recorded into a graph (libhsad only: no CLI)
FU_CAPTURE_TEST := $(TESTDIR)/test_fusion_capture
TEST_BINS += $(FU_CAPTURE_TEST)
$(FU_CAPTURE_TEST): tests/test_fusion_capture.c tests/test_dispatch_util.h $(LIBDIR)/libhsad.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' $< -o $@ $(LDFLAGS) \
	  $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lm
