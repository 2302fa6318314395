# contrib/slurm/slurm.mk - kmux under Slurm (docs/slurm.md), included by
# the top-level Makefile.
#
#   make slurm            $(BUILD)/kmux_spank.so, the SPANK plugin, when
#                         Slurm's headers are there (else a message, exit 0)
#   make install-slurm    the plugin and job_submit.lua under PREFIX
#   make test-slurm       the one-machine test cluster (tests/slurm/): needs
#                         root, installs Slurm and munge with apt-get
#
# The plugin is loaded by slurmstepd, srun and sbatch: it links libc and
# nothing else (Slurm's symbols come from the program that loads it), and
# it is never built with the sanitizers, which those programs do not load.

SLURM_INCLUDE ?= /usr/include
SLURM_SPANK_H := $(wildcard $(SLURM_INCLUDE)/slurm/spank.h)
SPANK_SRCS = contrib/slurm/kmux_spank.c contrib/slurm/ks-env.c src/common/size.c \
	     src/common/sock.c
SPANK_CFLAGS = -std=gnu11 -Wall -Wextra $(WERROR) -O2 -g -fPIC \
	-D_GNU_SOURCE -I$(SLURM_INCLUDE) \
	-iquote contrib/slurm -iquote src/common

ifeq ($(SLURM_SPANK_H),)
slurm:
	@echo "kmux: $(SLURM_INCLUDE)/slurm/spank.h not found: kmux_spank.so not built."
	@echo "kmux: install Slurm's development headers (Debian: apt-get install libslurm-dev;"
	@echo "kmux: RPM: slurm-devel) or point SLURM_INCLUDE at them (make slurm SLURM_INCLUDE=DIR)."
else
slurm: $(BUILD)/kmux_spank.so
endif

# SPANK finds the plugin's symbols by name: the version script exports
# those alone, so size_parse and the helpers never clash with anything in
# the loading program.
$(BUILD)/kmux_spank.so: $(SPANK_SRCS) contrib/slurm/ks-env.h src/common/size.h src/common/sock.h contrib/slurm/kmux_spank.map
	@mkdir -p $(dir $@)
	$(CC) $(SPANK_CFLAGS) -shared -o $@ $(SPANK_SRCS) \
		-Wl,--version-script=contrib/slurm/kmux_spank.map $(LDFLAGS)

install-slurm: slurm
	install -d $(DESTDIR)$(PREFIX)/lib/kmux $(DESTDIR)$(PREFIX)/share/kmux/slurm
	$(if $(SLURM_SPANK_H),install -m 0755 $(BUILD)/kmux_spank.so $(DESTDIR)$(PREFIX)/lib/kmux/kmux_spank.so)
	install -m 0644 contrib/slurm/job_submit.lua $(DESTDIR)$(PREFIX)/share/kmux/slurm/job_submit.lua

# Not part of `make test`: a developer machine without Slurm still passes.
test-slurm: all $(TEST_TARGETS)
	@BUILD=$(BUILD) bash tests/slurm/run.sh

.PHONY: slurm install-slurm test-slurm
