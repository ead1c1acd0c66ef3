# tools/hsad: the hsad command. Each command adds its own file here.
HSAD_TOOL_SRCS += tools/hsad/main.c
HSAD_TOOL_SRCS += tools/hsad/cmd_inspect.c tools/hsad/cmd_compile.c
HSAD_TOOL_SRCS += tools/hsad/cmd_info.c tools/hsad/cmd_run.c tools/hsad/cmd_bench.c
# hsad bench dispatch: the HIP path (hipcc; HIPCC / KERN_HIP_ARCH from kernels/module.mk)
$(BINDIR)/hsad-bench-hip: tools/hsad/bench_hip.hip tools/hsad/module.mk
	@mkdir -p $(@D)
	$(HIPCC) --offload-arch=$(KERN_HIP_ARCH) -O2 -rdynamic -o $@ $<
ALL_TARGETS += $(BINDIR)/hsad-bench-hip
