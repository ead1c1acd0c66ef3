# tools/hsad: the hsad command. Each command adds its own file here.
HSAD_TOOL_SRCS += tools/hsad/main.c tools/hsad/cli.c tools/hsad/cli_args.c
# the C++ ABI demangler (libstdc++'s abi::__cxa_demangle) for HIP kernel names
HSAD_TOOL_CXX_SRCS += tools/hsad/demangle.cc
# libstdc++ for the demangler (JSON output: json-c, below)
HSAD_TOOL_LIBS += -lstdc++
HSAD_TOOL_SRCS += tools/hsad/cmd_inspect.c tools/hsad/cmd_inspect_nv.c tools/hsad/cmd_compile.c
HSAD_TOOL_SRCS += tools/hsad/cmd_info.c tools/hsad/cmd_run.c tools/hsad/cmd_graph.c
# hsad run's guard naming a source-mode kernel's fault under kfd-emu
HSAD_TOOL_SRCS += tools/hsad/run_fault.c
# hsad bench: the framework (bench.h) and one file per suite
HSAD_TOOL_SRCS += tools/hsad/bench_main.c tools/hsad/bench_result.c tools/hsad/bench_report.c \
  tools/hsad/bench_child.c tools/hsad/bench_paths.c tools/hsad/bench_dispatch.c \
  tools/hsad/bench_roundtrip.c tools/hsad/bench_producers.c tools/hsad/bench_barrier.c \
  tools/hsad/bench_graph.c
# the memory suites (memory/: copies and pinned pools)
HSAD_TOOL_SRCS += tools/hsad/bench_copy.c tools/hsad/bench_pool.c
HSAD_TOOL_LIBS += -ljson-c
# hsad bench: the HIP path (hipcc; HIPCC / KERN_HIP_ARCH from kernels/module.mk)
# (the graph suite's shapes and the twin of its kernel come from headers of this tree)
$(BINDIR)/hsad-bench-hip: tools/hsad/bench_hip.hip tools/hsad/module.mk \
  tools/hsad/bench_graph_shape.h tools/kfd-emu/kfd_emu_twin.h
	@mkdir -p $(@D)
	$(HIPCC) --offload-arch=$(KERN_HIP_ARCH) -O2 -rdynamic -I$(CURDIR) -o $@ $<
ALL_TARGETS += $(BINDIR)/hsad-bench-hip

# tests/test_bench.c: hsad bench end to end (JSON via json-c, --csv, --plot, SIGINT)
$(TESTDIR)/test_bench: tests/test_bench.c $(BINDIR)/hsad $(BINDIR)/hsad-bench-hip
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DHSAD_BIN='"$(abspath $(BINDIR))/hsad"' $< -o $@ $(LDFLAGS) -lcriterion -ljson-c
TEST_BINS += $(TESTDIR)/test_bench

# What README.md and the --help texts show, run as written (tests/test_cli_docs.c).
CLI_DOCS_TEST := $(TESTDIR)/test_cli_docs
# (its install test copies this build: hsad-bench-hip, libhsad.so and kfd-emu must exist)
$(CLI_DOCS_TEST): tests/test_cli_docs.c $(LIBDIR)/libhsad.a | $(BINDIR)/hsad \
  $(BINDIR)/hsad-bench-hip $(LIBDIR)/libhsad.so $(EMUDIR)/libhsakmt.so.1
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DHSAD_SRCDIR='"$(CURDIR)"' -DHSAD_BUILDDIR='"$(abspath $(BUILD))"' \
	  -DHSAD_BINDIR='"$(abspath $(BINDIR))"' -DTEST_CC='"$(CC) $(SAN)"' -DTEST_SAN='"$(SAN)"' \
	  -DTEST_LIBS='"$(HSAD_LIB_LIBS)"' $< -o $@ $(LDFLAGS) -lcriterion -ljson-c
TEST_BINS += $(CLI_DOCS_TEST)
# poly (tests/data/cli/user_twin.cl) built by clang alone: a code object that carries no source,
# the case a user's twin is for (hsad compile and hsad run FILE.cl carry it: source mode)
CLI_DOCS_TWIN_HSACO := $(TESTDIR)/data/user_twin-gfx90a.hsaco
$(CLI_DOCS_TWIN_HSACO): tests/data/cli/user_twin.cl
	@mkdir -p $(@D)
	$(CLANG) $(KERN_CLFLAGS) -mcpu=gfx90a -mcode-object-version=4 -c $< -o $@.o
	$(KERN_LLD) -shared $@.o -o $@
	@rm -f $@.o
$(CLI_DOCS_TEST): $(CLI_DOCS_TWIN_HSACO)
$(CLI_DOCS_TEST): CFLAGS += -DUSER_TWIN_HSACO='"$(abspath $(CLI_DOCS_TWIN_HSACO))"'
# the CLI test parses hsad's JSON with json-c, and runs hipcc's hip-vector-add (kernels/)
$(TESTDIR)/test_dispatch_cli: LDFLAGS += -ljson-c
$(TESTDIR)/test_dispatch_cli: CFLAGS += -DHIP_VECTOR_ADD='"$(abspath $(BINDIR))/hip-vector-add"'
$(TESTDIR)/test_dispatch_cli: $(BINDIR)/hip-vector-add
