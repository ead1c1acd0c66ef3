# hsa-dispatch: plain GNU make, out-of-tree objects under $(BUILD)/.
# Each folder adds its sources and rules in its own module.mk (included below).
#
#   make            library (libhsad.so, libhsad.a), hsad, kfd-emu, kernels' code objects
#   make demo       install dependencies, build, run the main job (GPU, or kfd-emu without one)
#   make test       install dependencies, build, run every Criterion test
#   make bench      hsad bench (all suites; BENCH_ARGS='...' passes options)
#   make mutation   the tests against the deliberate bugs of tests/mutation/ (MUTATION_ARGS)
#   make coverage   every test with the library under gcov (own tree build-cov/): lines and
#                   branches per file and folder, public functions no test calls (gcovr)
#   make mutation-sample   mechanically generated mutants of the library, sampled with a seed
#   make install PREFIX=/usr/local   (DESTDIR for staging): hsad, hsad-bench-hip, libhsad,
#                   kfd-emu, the public headers (kfd_emu_twin.h too) and hsad.pc
#   make clean

BUILD   ?= build
PREFIX  ?= /usr/local
CC      ?= cc
CLANG   ?= clang-15
OPT     ?= -O2
SAN     ?=
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=gnu11 -Wall -Wextra -fPIC -I. $(SAN)
CXX     ?= g++
CXXFLAGS ?= $(OPT) -g
CXXFLAGS += -std=c++17 -Wall -Wextra -fPIC -fno-exceptions -I. $(SAN)
LDFLAGS += $(SAN)
DEPFLAGS = -MMD -MP

LIBDIR   := $(BUILD)/lib
BINDIR   := $(BUILD)/bin
EMUDIR   := $(LIBDIR)/hsad/kfd-emu
KERNDIR  := $(BUILD)/kernels
TESTDIR  := $(BUILD)/tests

# Filled by module.mk files.
HSAD_LIB_SRCS :=
# ROCr is not linked: hsa-dispatch/rocr.c loads it at run time (hsad_rocr.h). comgr is
# loaded on first compile the same way.
HSAD_LIB_LIBS := -lelf -lmsgpackc -lpthread -ldl
HSAD_TOOL_SRCS :=
HSAD_TOOL_CXX_SRCS :=
HSAD_TOOL_LIBS :=
TEST_BINS :=
ALL_TARGETS :=
HEADERS :=

.PHONY: all deps func-lengths demo test bench install clean fuzz mutation coverage coverage-run mutation-sample
all:

# Backends (issue 19): amd (ROCr, AQL queues; building it needs ROCm's headers, running it
# libhsa-runtime64) and nvidia (CUDA driver API; libcuda.so.1 is loaded at run time, building
# needs nothing). Default: both where ROCm's headers are installed, else nvidia alone.
# `make BACKENDS=nvidia` builds without any ROCm header or library: libhsad (common/,
# hsa-dispatch/front.c, nvidia/), hsad with `info`, the NVIDIA tests and bench.
comma := ,
BACKENDS ?= $(if $(wildcard /usr/include/hsa/hsa.h),amd nvidia,nvidia)
BACKEND_LIST := $(strip $(subst $(comma), ,$(BACKENDS)))
ifneq ($(filter-out amd nvidia,$(BACKEND_LIST)),)
$(error BACKENDS='$(BACKENDS)': known backends are amd and nvidia)
endif
ifneq ($(filter amd,$(BACKEND_LIST)),)
include $(sort $(wildcard */module.mk tools/*/module.mk))
else
# without AMD: the public headers leave their AMD-only declarations out; the front forwards
# every public call to the object's backend table
CFLAGS += -DHSAD_NO_AMD
# nvcodeobj/ (cubin metadata, NVRTC for hsad run's .cu sources) needs libelf and zstd
# (monitoring's trace export, hsa-dispatch/trace.c, writes JSON with json-c)
HSAD_LIB_LIBS := -lpthread -ldl -lelf -lzstd -ljson-c
include common/module.mk nvidia/module.mk tools/cuda-mock/module.mk nvcodeobj/module.mk
HSAD_LIB_SRCS += hsa-dispatch/front.c hsa-dispatch/backend.c fusion/graph.c fusion/graph_front.c \
  fusion/capture.c \
  codeobj/argtype.c hsa-dispatch/variants.c hsa-dispatch/monitor_common.c hsa-dispatch/trace.c
HEADERS += hsa-dispatch/hsad.h hsa-dispatch/hsad_queue.h hsa-dispatch/hsad_vendor.h \
  hsa-dispatch/hsad_variants.h hsa-dispatch/hsad_monitor.h \
  memory/hsad_memory.h codeobj/hsad_codeobj.h fusion/hsad_fusion.h \
  $(addprefix codeobj/hsad_codeobj_,$(addsuffix .h,metadata target container load kernarg \
  occupancy compile))
HSAD_TOOL_SRCS += tools/hsad/main.c tools/hsad/cli.c tools/hsad/cmd_info.c \
  tools/hsad/cli_args.c tools/hsad/cmd_run.c tools/hsad/cmd_graph.c tools/hsad/cmd_inspect.c \
  tools/hsad/cmd_inspect_nv.c
HSAD_TOOL_CXX_SRCS += tools/hsad/demangle.cc
HSAD_TOOL_LIBS += -ljson-c -lstdc++
endif

HSAD_LIB_OBJS := $(HSAD_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# The library's own calls stay inside it: no interposition of its exported functions on calls
# between them (they may inline; no PLT), and the internal headers declare hidden symbols
# (dispatch_internal.h), so the dispatch path measured through libhsad.so (tests/test_budget.c)
# costs what it costs in libhsad.a.
$(HSAD_LIB_OBJS): CFLAGS += -fno-semantic-interposition
build/obj/hsa-dispatch/dispatch.o: CFLAGS += --param=logical-op-non-short-circuit=0
# COVERAGE=1 (make coverage's inner make, BUILD=build-cov): the library's objects unoptimised
# with gcov's counters (-O0: one line, one block; branches as written), libgcov linked after
# libhsad (HSAD_LIB_LIBS). kfd-emu, the tools and the tests stay as they are.
ifeq ($(COVERAGE),1)
# Counters updated atomically: tests and kfd-emu's callbacks run library code on several threads
# (plain increments lose counts and gcov then reads negative branch counts).
$(HSAD_LIB_OBJS): CFLAGS += -O0 --coverage -fprofile-update=atomic
HSAD_LIB_LIBS += -lgcov
# test_cli_docs builds README's example with README's own command line: libgcov goes in as a
# sanitizer's runtime would (TEST_SAN), for that binary alone
$(TESTDIR)/test_cli_docs: private SAN += --coverage
endif
HSAD_TOOL_OBJS := $(HSAD_TOOL_SRCS:%.c=$(BUILD)/obj/%.o) $(HSAD_TOOL_CXX_SRCS:%.cc=$(BUILD)/obj/%.o)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(DEPFLAGS) -c $< -o $@

$(LIBDIR)/libhsad.a: $(HSAD_LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(LIBDIR)/libhsad.so: $(HSAD_LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libhsad.so.0 $(LDFLAGS) -o $@ $^ $(HSAD_LIB_LIBS)
	ln -sf libhsad.so $(@D)/libhsad.so.0 # the soname, so programs linked here run from the tree

$(BINDIR)/hsad: $(HSAD_TOOL_OBJS) $(LIBDIR)/libhsad.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(HSAD_TOOL_OBJS) $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) $(HSAD_TOOL_LIBS) -lm

all: $(LIBDIR)/libhsad.so $(LIBDIR)/libhsad.a $(if $(HSAD_TOOL_SRCS),$(BINDIR)/hsad) $(ALL_TARGETS)

deps:
	@./scripts/deps.sh

# No function of tools/hsad over 80 lines (issue 23: commands as phases); FUNC_LENGTH_ALLOW
# names those still to split. Part of `make test`.
FUNC_LENGTH_ALLOW :=
func-lengths:
	@python3 scripts/func-lengths.py --max 80 $(addprefix --allow ,$(FUNC_LENGTH_ALLOW)) \
	  tools/hsad/*.c

# Tests: every Criterion binary in TEST_BINS, run with kfd-emu first on the library path
# (a host with /dev/kfd runs them the same way; kfd-emu is what CI has).
test: deps func-lengths
	@$(MAKE) --no-print-directory all $(TEST_BINS)
	@./scripts/run-tests.sh $(EMUDIR) $(TEST_BINS)

demo: deps
	@$(MAKE) --no-print-directory all
	@./scripts/demo.sh $(BINDIR)/hsad

# make bench BENCH_ARGS='dispatch --json' (default: every suite, table on stdout)
bench: deps
	@$(MAKE) --no-print-directory all
	$(BINDIR)/hsad bench $(BENCH_ARGS)

# make mutation MUTATION_ARGS='--all 11-batch-doorbell-first-id' (default: every patch; see
# scripts/mutation.sh). Builds each mutant in a private copy of the tree; not part of make test.
mutation: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) ./scripts/mutation.sh $(MUTATION_ARGS)

# make mutation-sample MUTATION_SAMPLE_ARGS='--count 200 --seed 18' (scripts/mutation-sample.py)
mutation-sample: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) python3 scripts/mutation-sample.py $(MUTATION_SAMPLE_ARGS)

# make coverage: builds the library with gcov counters in its own tree ($(COV_BUILD), never
# mixed with build/) and runs scripts/coverage.py there: every test binary as make test runs
# them (a failure is reported, the report is still written), each binary's counters apart
# (BUILD/coverage/per-test/NAME: which tests execute a line, for make mutation-sample), then
# lines and branches per file and per folder of the library and the public functions (hsad_*
# in HEADERS) that no test runs or names. gcovr is installed on demand (scripts/deps.sh
# coverage); make test does not need it.
COV_BUILD ?= build-cov
coverage: deps
	@./scripts/deps.sh coverage
	@$(MAKE) --no-print-directory BUILD=$(COV_BUILD) COVERAGE=1 coverage-run
coverage-run:
	@$(MAKE) --no-print-directory all $(TEST_BINS)
	@python3 scripts/coverage.py --build $(BUILD) --emudir $(EMUDIR) --headers "$(HEADERS)" \
	  $(TEST_BINS)

# The folder holding hsa/hsa.h, which every public header includes: hsad.pc's Cflags carry it
# (pkg-config drops it when it is a system folder, as Debian's /usr/include is).
HSA_INCDIR ?= $(patsubst %/hsa/hsa.h,%,$(firstword $(wildcard /usr/include/hsa/hsa.h \
  /opt/rocm/include/hsa/hsa.h)))

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/hsad/kfd-emu \
	  $(DESTDIR)$(PREFIX)/include/hsad $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BINDIR)/hsad $(DESTDIR)$(PREFIX)/bin/
	$(if $(filter $(BINDIR)/hsad-bench-hip,$(ALL_TARGETS)),install -m 755 $(BINDIR)/hsad-bench-hip $(DESTDIR)$(PREFIX)/bin/)
	install -m 644 $(LIBDIR)/libhsad.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBDIR)/libhsad.so $(DESTDIR)$(PREFIX)/lib/libhsad.so.0
	ln -sf libhsad.so.0 $(DESTDIR)$(PREFIX)/lib/libhsad.so
	$(if $(filter amd,$(BACKEND_LIST)),cp -a $(EMUDIR)/. $(DESTDIR)$(PREFIX)/lib/hsad/kfd-emu/)
	$(if $(filter amd,$(BACKEND_LIST)),install -d $(DESTDIR)$(PREFIX)/share/hsad/kernels && \
	  install -m 644 kernels/*.cl $(KERNDIR)/*.hsaco $(DESTDIR)$(PREFIX)/share/hsad/kernels/)
	for h in $(HEADERS); do install -D -m 644 $$h $(DESTDIR)$(PREFIX)/include/hsad/$$h; done
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(HSAD_VERSION_STR)|' \
	  -e 's|@HSA_CFLAGS@|$(if $(HSA_INCDIR),-I$(HSA_INCDIR))|' scripts/hsad.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/hsad.pc

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# Every installed header compiles alone as C11 and as C++11 (-pedantic -Werror): one stamp per
# header and language, prerequisites of tests/test_headers (so `make test` checks them).
HDR_STAMPS := $(HEADERS:%.h=$(BUILD)/hdrcheck/%.c.ok) $(HEADERS:%.h=$(BUILD)/hdrcheck/%.cxx.ok)
$(BUILD)/hdrcheck/%.c.ok: %.h
	@mkdir -p $(@D)
	@echo '#include "$<"' | $(CC) -std=c11 -Wall -Wextra -pedantic -Werror -I. -fsyntax-only -x c - \
	  && touch $@
$(BUILD)/hdrcheck/%.cxx.ok: %.h
	@mkdir -p $(@D)
	@echo '#include "$<"' | $(CXX) -std=c++11 -Wall -Wextra -pedantic -Werror -I. -fsyntax-only \
	  -x c++ - && touch $@
HDR_TEST := $(TESTDIR)/test_headers
TEST_BINS += $(HDR_TEST)
$(TESTDIR)/api_cxx.o: tests/api_cxx.cpp $(HEADERS)
	@mkdir -p $(@D)
	$(CXX) -std=c++11 -Wall -Wextra -pedantic -Werror -fno-exceptions -fPIC -I. $(SAN) -c $< -o $@
$(HDR_TEST): tests/test_headers.c $(TESTDIR)/api_cxx.o $(LIBDIR)/libhsad.a $(HDR_STAMPS) | kernels
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTEST_KERNDIR='"$(abspath $(KERNDIR))"' -DHSAD_SRCDIR='"$(CURDIR)"' $< \
	  $(TESTDIR)/api_cxx.o -o $@ \
	  $(LDFLAGS) -rdynamic $(LIBDIR)/libhsad.a $(HSAD_LIB_LIBS) -lcriterion -lstdc++ -lm -ldl
