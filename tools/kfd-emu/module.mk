# tools/kfd-emu: the emulated KFD thunk, a drop-in libhsakmt.so.1 (versioned HSAKMT_1).
KFD_EMU_SRCS := $(sort $(wildcard tools/kfd-emu/*.c))
KFD_EMU_OBJS := $(KFD_EMU_SRCS:%.c=$(BUILD)/obj/%.o)
KFD_EMU_LIB := $(EMUDIR)/libhsakmt.so.1

# One metadata reader: kernels.c reads a kernel's metadata with codeobj/ (hsad_codeobj_load_note).
# ROCr loads libhsakmt.so.1 on its own, so kfd-emu carries the codeobj/ objects it needs in itself
# (their messages through tools/kfd-emu/co_status.c, not common/status.c: see there): built here a second time, with hidden
# visibility, into a static archive of kfd-emu's own ($(BUILD)/obj/kfd-emu-codeobj/, never
# libhsad's objects, so COVERAGE=1 and sanitizer builds of libhsad do not reach it), linked with
# --exclude-libs and the version script's `local: *`: none of their symbols is exported, and
# kfd-emu's calls bind to its own copies when libhsad (with the same names) is in the process.
KFD_EMU_CO_SRCS := codeobj/argtype.c codeobj/arena.c codeobj/target.c codeobj/elf.c codeobj/metadata.c \
  codeobj/descriptor.c codeobj/kernarg.c codeobj/load.c common/null_args.c
KFD_EMU_CO_OBJS := $(KFD_EMU_CO_SRCS:%.c=$(BUILD)/obj/kfd-emu-codeobj/%.o)
KFD_EMU_CO_LIB := $(BUILD)/obj/kfd-emu-codeobj/libcodeobj.a
$(BUILD)/obj/kfd-emu-codeobj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fvisibility=hidden $(DEPFLAGS) -c $< -o $@
$(KFD_EMU_CO_LIB): $(KFD_EMU_CO_OBJS)
	rm -f $@ && ar rcs $@ $^

$(KFD_EMU_LIB): $(KFD_EMU_OBJS) $(KFD_EMU_CO_LIB) tools/kfd-emu/libhsakmt.ver
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libhsakmt.so.1 -Wl,--version-script=tools/kfd-emu/libhsakmt.ver \
	  -Wl,--no-undefined -Wl,--exclude-libs,ALL $(LDFLAGS) -o $@ $(KFD_EMU_OBJS) \
	  $(KFD_EMU_CO_LIB) -lelf -lmsgpackc -lpthread -ldl -lnuma

ALL_TARGETS += $(KFD_EMU_LIB)
# installed with the headers (include/hsad/tools/kfd-emu/): how to write a twin, and the query
# for why kfd-emu refused its configuration
HEADERS += tools/kfd-emu/kfd_emu_twin.h tools/kfd-emu/kfd_emu.h
