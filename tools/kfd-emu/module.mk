# tools/kfd-emu: the emulated KFD thunk, a drop-in libhsakmt.so.1 (versioned HSAKMT_1).
KFD_EMU_SRCS := $(sort $(wildcard tools/kfd-emu/*.c))
KFD_EMU_OBJS := $(KFD_EMU_SRCS:%.c=$(BUILD)/obj/%.o)
KFD_EMU_LIB := $(EMUDIR)/libhsakmt.so.1

$(KFD_EMU_LIB): $(KFD_EMU_OBJS) tools/kfd-emu/libhsakmt.ver
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libhsakmt.so.1 -Wl,--version-script=tools/kfd-emu/libhsakmt.ver \
	  -Wl,--no-undefined $(LDFLAGS) -o $@ $(KFD_EMU_OBJS) -lelf -lmsgpackc -lpthread -ldl -lnuma

ALL_TARGETS += $(KFD_EMU_LIB)
# installed with the headers (include/hsad/tools/kfd-emu/): how to write a twin, and the query
# for why kfd-emu refused its configuration
HEADERS += tools/kfd-emu/kfd_emu_twin.h tools/kfd-emu/kfd_emu.h
